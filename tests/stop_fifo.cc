#include "tests/stop_fifo.h"

#include <signal.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/subprocess.h"

namespace leeway {
namespace testing {

absl::Status StopFifoOf(const std::string& ready_file,
                        const std::map<std::string, std::string>& env, const std::string& log) {
  auto wedge = Subprocess::Start(
      {RunfilePath("tests/shm_wedge_peer"), "--server_file=" + ready_file}, env, log);
  if (!wedge.ok()) return wedge.status();
  absl::StatusOr<int> code = (*wedge)->Wait(absl::Now() + absl::Seconds(20));
  if (!code.ok()) return code.status();
  if (*code != 128 + SIGKILL) {
    return absl::InternalError(absl::StrCat("shm_wedge_peer exited ", *code,
                                            " instead of dying inside the send: ",
                                            (*wedge)->Output()));
  }
  return absl::OkStatus();
}

}  // namespace testing
}  // namespace leeway
