// Environment-variable equivalents of command-line flags, for Kubernetes:
// LoadFlagsFromEnvironment sets each named flag from its variable when the
// variable is set and not empty. Call it before absl::ParseCommandLine, so
// that an explicit flag on the command line still wins. A value that does
// not parse is an INVALID_ARGUMENT naming the variable. Not thread-safe
// (run it first thing in main).
#ifndef LEEWAY_CORE_COMMON_ENV_FLAGS_H_
#define LEEWAY_CORE_COMMON_ENV_FLAGS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace leeway {

struct FlagEnv {
  std::string flag;      // e.g. "listen"
  std::string variable;  // e.g. "LEEWAY_LISTEN"
};

absl::Status LoadFlagsFromEnvironment(const std::vector<FlagEnv>& pairs);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_ENV_FLAGS_H_
