// Exit codes that Leeway's processes share with whoever supervises them
// (leeway launch, a Kubernetes restart policy, a shell script).
#ifndef LEEWAY_CORE_COMMON_EXIT_CODES_H_
#define LEEWAY_CORE_COMMON_EXIT_CODES_H_

namespace leeway {

// The process gave up because its data plane stalled for good (UCX kept
// reporting events that never came: a shared-memory FIFO stopped by a peer
// that died inside a send; README, data plane) and wants to be started
// again. It wrote a checkpoint first where it keeps them. (EX_TEMPFAIL.)
constexpr int kExitDataPlaneStalled = 75;

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_EXIT_CODES_H_
