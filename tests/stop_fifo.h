// StopFifoOf: has a shared-memory peer die inside a send into another
// process's FIFO (tests/shm_wedge_peer), which stops that FIFO for good in
// UCX 1.13 (README, data plane), for the tests of what follows.
#ifndef LEEWAY_TESTS_STOP_FIFO_H_
#define LEEWAY_TESTS_STOP_FIFO_H_

#include <map>
#include <string>

#include "absl/status/status.h"

namespace leeway {
namespace testing {

// `ready_file` names the target's UCP worker address (line 2, hex); `env`
// must give the peer shared memory (UCX_TLS); its output goes to `log`.
// OK once the peer died of its own SIGKILL inside the send, within 20 s.
absl::Status StopFifoOf(const std::string& ready_file,
                        const std::map<std::string, std::string>& env, const std::string& log);

}  // namespace testing
}  // namespace leeway

#endif  // LEEWAY_TESTS_STOP_FIFO_H_
