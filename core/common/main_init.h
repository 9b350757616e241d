// What every Leeway binary's main() does first: flags from their
// environment variables (env_flags.h: --foo reads LEEWAY_FOO; a bad value
// exits 2 with a message), then the command line (which wins), and Abseil's
// lock-order checking turned off (Debian's Abseil has it on; it costs time on
// every Mutex and reports the benign inversions of callbacks run under the
// transport's worker lock). `--list_env` prints the variables the binary
// reads, one per line, and exits 0 (the Kubernetes policy test compares the
// manifests against it). Returns the positional arguments, argv[0] first.
#ifndef LEEWAY_CORE_COMMON_MAIN_INIT_H_
#define LEEWAY_CORE_COMMON_MAIN_INIT_H_

#include <string>
#include <vector>

namespace leeway {

// Every flag of the program has its variable.
std::vector<char*> InitMain(int argc, char** argv);

// Only the named flags have variables (a client tool's connection settings).
std::vector<char*> InitMain(int argc, char** argv, const std::vector<std::string>& env_flags);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_MAIN_INIT_H_
