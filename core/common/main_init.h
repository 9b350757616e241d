// What every Leeway binary's main() does first: flags from their
// environment variables (env_flags.h; a bad value exits 2 with a message),
// then the command line (which wins), and Abseil's lock-order checking
// turned off (Debian's Abseil has it on; it costs time on every Mutex and
// reports the benign inversions of callbacks run under the transport's
// worker lock). Returns the positional arguments, argv[0] first.
#ifndef LEEWAY_CORE_COMMON_MAIN_INIT_H_
#define LEEWAY_CORE_COMMON_MAIN_INIT_H_

#include <vector>

#include "core/common/env_flags.h"

namespace leeway {

std::vector<char*> InitMain(int argc, char** argv, const std::vector<FlagEnv>& environment);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_MAIN_INIT_H_
