#include "core/common/main_init.h"

#include <cstdio>
#include <cstdlib>

#include "absl/flags/parse.h"
#include "absl/synchronization/mutex.h"

namespace leeway {

std::vector<char*> InitMain(int argc, char** argv, const std::vector<FlagEnv>& environment) {
  const absl::Status env = LoadFlagsFromEnvironment(environment);
  if (!env.ok()) {
    std::fprintf(stderr, "%s\n", env.ToString().c_str());
    std::exit(2);
  }
  std::vector<char*> positional = absl::ParseCommandLine(argc, argv);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  return positional;
}

}  // namespace leeway
