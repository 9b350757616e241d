// A worker's session with the coordinator: it registers (as a worker), then
// heartbeats from a thread of its own with the worker's clock, fetches each
// newer compression plan, sends the statistics reports the training loop
// hands it as soon as they come (a report's reply may announce a plan,
// fetched at once), and keeps what the coordinator said: paused, stop, the servers
// it holds down. A failed heartbeat is retried with backoff (the
// coordinator may be restarting); a refused one (the coordinator no longer
// knows this worker) registers again under the same rank. Training never
// waits on the coordinator: everything here is read from memory.
// Thread-safe.
#ifndef LEEWAY_WORKER_CONTROL_SESSION_H_
#define LEEWAY_WORKER_CONTROL_SESSION_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/control/coordinator_client.h"

namespace leeway {

struct ControlSessionOptions {
  std::string coordinator;  // host:port
  std::string token;
  std::string host;
  std::string ucx_worker_address;  // raw bytes
  std::optional<uint32_t> rank;
  bool gpu = false;
};

class ControlSession {
 public:
  // Registers, retrying a coordinator that is not up until `deadline`.
  static absl::StatusOr<std::unique_ptr<ControlSession>> Register(
      const ControlSessionOptions& options, absl::Time deadline);
  ~ControlSession();

  const v1::RegisterResponse& registration() const { return registration_; }
  CoordinatorClient& client() { return client_; }

  // Starts heartbeating.
  void Start();

  void SetClock(uint32_t clock);
  // Queued; the heartbeat thread sends it at once (the oldest are dropped
  // when the coordinator is unreachable for long).
  void Report(v1::StatsReport report);
  // The newest plan fetched and not yet taken.
  std::optional<v1::CompressionPlan> TakePlan();

  bool paused() const;
  bool stop_requested() const;
  std::set<uint32_t> down_servers() const;

 private:
  explicit ControlSession(const ControlSessionOptions& options);
  absl::Status RegisterOnce(absl::Time deadline);
  void Loop();
  void Act(const v1::HeartbeatResponse& reply);
  // Fetches the plan if `announced` is newer than the one known.
  void FetchPlanIfNewer(uint64_t announced);
  // Sends the queued reports; after a failed one the rest wait for the
  // next heartbeat.
  void SendReports();

  const ControlSessionOptions options_;
  CoordinatorClient client_;
  v1::RegisterResponse registration_;  // written before Start, then by Loop only
  std::thread thread_;

  mutable absl::Mutex mu_;
  uint32_t clock_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t plan_version_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<v1::CompressionPlan> plan_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::StatsReport> reports_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool reports_blocked_ ABSL_GUARDED_BY(mu_) = false;  // a send failed
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_requested_ ABSL_GUARDED_BY(mu_) = false;
  std::set<uint32_t> down_servers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_CONTROL_SESSION_H_
