#include "core/common/env_flags.h"

#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"

namespace leeway {

absl::Status LoadFlagsFromEnvironment(const std::vector<FlagEnv>& pairs) {
  for (const FlagEnv& pair : pairs) {
    const char* value = std::getenv(pair.variable.c_str());
    if (value == nullptr || *value == '\0') continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(pair.flag);
    if (flag == nullptr) {
      return absl::InternalError(absl::StrCat("no flag --", pair.flag));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          pair.variable, "=", value, " is not a valid --", pair.flag, ": ", error));
    }
  }
  return absl::OkStatus();
}

}  // namespace leeway
