#include "core/common/main_init.h"

#include <cstdio>
#include <cstdlib>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"
#include "core/common/env_flags.h"

ABSL_FLAG(bool, list_env, false,
          "print the LEEWAY_* environment variables this program reads and exit");

namespace leeway {

std::vector<char*> InitMain(int argc, char** argv) {
  return InitMain(argc, argv, ProgramFlagNames("core/common/main_init.cc"));
}

std::vector<char*> InitMain(int argc, char** argv, const std::vector<std::string>& env_flags) {
  const absl::Status env = LoadFlagsFromEnvironment(env_flags);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.ToString().c_str());
    std::exit(2);
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_list_env)) {
    for (const std::string& flag : env_flags) {
      std::printf("%s\n", EnvironmentVariableFor(flag).c_str());
    }
    std::exit(0);
  }
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return positional;
}

}  // namespace leeway
