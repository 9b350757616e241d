// Who is in the job: registration (ranks per role, incarnations),
// heartbeats, and failure detection. Time comes in as an argument - the
// coordinator's service passes absl::Now(), tests pass what they like - so
// that detection is deterministic under test.
//
// - Workers and servers have separate rank spaces. A member gets the rank
//   it asks for (a restarted server, a Kubernetes worker with its index) or
//   the lowest free one; a rank held by a live member is refused.
// - Registering again with the rank of a dead or down member rejoins it:
//   a new incarnation; heartbeats of older incarnations are refused.
// - Sweep(now) declares every member silent for more than the timeout:
//   workers dead (the servers drop them from min_clock), servers down
//   (workers hold their chunks until they come back).
// Thread-safe.
#ifndef LEEWAY_COORDINATOR_MEMBERSHIP_H_
#define LEEWAY_COORDINATOR_MEMBERSHIP_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leeway {

enum class MemberRole { kWorker, kServer };
enum class MemberHealth { kAlive, kDead /* workers */, kDown /* servers */ };

const char* MemberRoleName(MemberRole role);
const char* MemberHealthName(MemberHealth health);

struct MemberInfo {
  MemberRole role = MemberRole::kWorker;
  uint32_t rank = 0;
  uint32_t incarnation = 0;
  std::string host;
  std::string data_address;
  std::string ucx_worker_address;
  bool gpu = false;
  MemberHealth health = MemberHealth::kAlive;
  absl::Time last_heartbeat;
  uint32_t clock = 0;
};

struct Registration {
  MemberRole role = MemberRole::kWorker;
  std::string host;
  std::string data_address;
  std::string ucx_worker_address;
  bool gpu = false;
  std::optional<uint32_t> requested_rank;
};

class Membership {
 public:
  explicit Membership(absl::Duration heartbeat_timeout);

  absl::StatusOr<MemberInfo> Register(const Registration& request, absl::Time now);
  // NOT_FOUND for an unknown member, FAILED_PRECONDITION for a stale
  // incarnation or a member already declared dead (it must register again).
  absl::Status Heartbeat(MemberRole role, uint32_t rank, uint32_t incarnation,
                         uint32_t clock, absl::Time now);
  // Members that went silent, now marked dead or down.
  std::vector<MemberInfo> Sweep(absl::Time now);

  std::vector<MemberInfo> Members() const;
  std::vector<uint32_t> Ranks(MemberRole role, MemberHealth health) const;
  size_t LiveCount(MemberRole role) const;
  absl::Duration heartbeat_timeout() const { return timeout_; }

 private:
  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  std::map<std::pair<MemberRole, uint32_t>, MemberInfo> members_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_MEMBERSHIP_H_
