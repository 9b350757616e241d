// The coordinator's state and the logic behind its gRPC services, in
// proto terms but without gRPC: membership, the shard map, the compression
// plan, statistics, pause and checkpoint requests. The service layer
// (coordinator_service.h) only checks tokens and translates Status codes.
//
// - The shard map is fixed by the first RegisterLayers once the expected
//   servers have registered (until then: UNAVAILABLE, retry); a later
//   declaration must match it (else FAILED_PRECONDITION).
// - Plans are recomputed every `plan_window` clocks of the slowest worker
//   and whenever the policy changes; each has a version and takes effect
//   at the clock boundary after the fastest worker's clock. Until workers
//   have reported a bandwidth, the adaptive plan is dense; once every live
//   worker has reported one, the next plan is made at once rather than at
//   the end of the window, so a job runs dense for its first clock or two.
// - Statistics keep the latest report per member and, per layer, the
//   gradient norm at the start and end of the current window: bounded.
// Thread-safe; time comes in as an argument.
#ifndef LEEWAY_COORDINATOR_COORDINATOR_STATE_H_
#define LEEWAY_COORDINATOR_COORDINATOR_STATE_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "admin.pb.h"
#include "coordinator.pb.h"
#include "coordinator/controller.h"
#include "coordinator/membership.h"

namespace leeway {

struct CoordinatorConfig {
  uint64_t job_id = 1;
  int32_t staleness = 0;  // -1: asynchronous
  uint32_t expected_workers = 1;
  uint32_t expected_servers = 1;
  uint64_t chunk_bytes = 4 << 20;
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration heartbeat_timeout = absl::Seconds(5);
  uint32_t plan_window = 50;  // clocks
  ControllerConfig controller;
};

class CoordinatorState {
 public:
  CoordinatorState(const CoordinatorConfig& config, const ControllerPolicy& policy,
                   absl::Time start);

  // Coordinator service.
  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request,
                                                absl::Time now);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                  absl::Time now);
  absl::StatusOr<v1::ShardMap> RegisterLayers(const v1::RegisterLayersRequest& request);
  absl::StatusOr<v1::ShardMap> GetShardMap(uint64_t min_version) const;
  v1::GetMembersResponse GetMembers() const;
  absl::StatusOr<v1::ReportStatsResponse> ReportStats(const v1::StatsReport& report);
  v1::CompressionPlan GetPlan() const;

  // Declares silent members dead or down; returns them.
  std::vector<MemberInfo> Sweep(absl::Time now);

  // Admin service.
  v1::ClusterStatus ClusterStatus(absl::Time now) const;
  v1::StalenessReport Staleness() const;
  v1::ThroughputReport Throughput() const;
  v1::LayerStatsReport LayerStats() const;
  absl::StatusOr<v1::CompressionPlan> SetPolicy(const std::string& policy);
  bool SetPaused(bool paused);
  uint64_t RequestCheckpoint();

  uint64_t job_id() const { return config_.job_id; }

 private:
  struct LayerWindow {
    double norm_start = 0;
    double norm_end = 0;
    v1::LayerStats latest;
    bool seen = false;
  };

  void Replan(const char* why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker's statistics; the first measurement of every worker makes a plan.
  void RecordWorkerReport(const v1::StatsReport& report) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether every live worker has reported a bandwidth.
  bool AllWorkersMeasured() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t MinWorkerClock() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t MaxWorkerClock() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorConfig config_;
  const absl::Time start_;
  Membership members_;

  mutable absl::Mutex mu_;
  ControllerPolicy policy_ ABSL_GUARDED_BY(mu_);
  v1::ShardMap shard_map_ ABSL_GUARDED_BY(mu_);  // version 0: none yet
  v1::CompressionPlan plan_ ABSL_GUARDED_BY(mu_);
  uint32_t plan_clock_ ABSL_GUARDED_BY(mu_) = 0;  // min clock at the last plan
  bool plan_unmeasured_ ABSL_GUARDED_BY(mu_) = false;  // adaptive, no bandwidth yet
  std::map<uint32_t, LayerWindow> layer_stats_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, v1::WorkerStats> worker_stats_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, v1::ServerStats> server_stats_ ABSL_GUARDED_BY(mu_);
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t checkpoint_request_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_COORDINATOR_STATE_H_
