// Environment-variable equivalents of command-line flags, for Kubernetes:
// flag --foo_bar reads LEEWAY_FOO_BAR. LoadFlagsFromEnvironment sets each
// named flag from its variable when the variable is set and not empty; call
// it before absl::ParseCommandLine, so that an explicit flag on the command
// line still wins. A value that does not parse is an INVALID_ARGUMENT naming
// the variable. ProgramFlagNames lists the flags this binary defines itself
// (not Abseil's own, not main_init's), sorted, so that a binary can print the
// variables it accepts. Not thread-safe (run it first thing in main).
#ifndef LEEWAY_CORE_COMMON_ENV_FLAGS_H_
#define LEEWAY_CORE_COMMON_ENV_FLAGS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace leeway {

// "foo_bar" -> "LEEWAY_FOO_BAR".
std::string EnvironmentVariableFor(absl::string_view flag);

// The flags defined outside Abseil and outside `except_file` (a source path
// suffix, e.g. "core/common/main_init.cc"), by name.
std::vector<std::string> ProgramFlagNames(absl::string_view except_file = "");

absl::Status LoadFlagsFromEnvironment(const std::vector<std::string>& flags);

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_ENV_FLAGS_H_
