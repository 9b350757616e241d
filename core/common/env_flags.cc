#include "core/common/env_flags.h"

#include <algorithm>
#include <cstdlib>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace leeway {

std::string EnvironmentVariableFor(absl::string_view flag) {
  return absl::StrCat("LEEWAY_", absl::AsciiStrToUpper(flag));
}

std::vector<std::string> ProgramFlagNames(absl::string_view except_file) {
  std::vector<std::string> names;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    const std::string file = flag->Filename();
    // Abseil's flags (flagfile, helpfull, ...) keep their absl/ path.
    if (absl::StrContains(file, "absl/")) continue;
    if (!except_file.empty() && absl::EndsWith(file, except_file)) continue;
    names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::Status LoadFlagsFromEnvironment(const std::vector<std::string>& flags) {
  for (const std::string& name : flags) {
    const std::string variable = EnvironmentVariableFor(name);
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr || *value == '\0') continue;
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) {
      return absl::InternalError(absl::StrCat("no flag --", name));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          variable, "=", value, " is not a valid --", name, ": ", error));
    }
  }
  return absl::OkStatus();
}

}  // namespace leeway
