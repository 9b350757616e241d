// A server's link to the coordinator: it registers (as a server, with its
// data-plane and UCX worker addresses), then heartbeats from a thread of
// its own and acts on the replies: a newer shard map declares the chunks
// assigned to this server, with each layer's optimizer (LayerSpec); workers
// the coordinator declared dead leave the SSP clock set (parked pulls of
// the others re-check); a new checkpoint request id writes a checkpoint. Every few heartbeats it
// reports its statistics (staleness histograms, pushes, bad messages).
// Calls have deadlines; a failed heartbeat is logged and retried, a
// refused one (the coordinator restarted, or declared this server down)
// re-registers. Never touches the data plane's threads.
#ifndef LEEWAY_SERVER_COORDINATOR_LINK_H_
#define LEEWAY_SERVER_COORDINATOR_LINK_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "coordinator.grpc.pb.h"
#include "core/control/coordinator_client.h"
#include "server/checkpointer.h"
#include "server/server_core.h"

namespace leeway {

struct CoordinatorLinkOptions {
  std::string coordinator;  // host:port
  std::string token;
  std::string host;
  std::string data_address;        // host:port of the UCX listener
  std::string ucx_worker_address;  // raw bytes
  std::optional<uint32_t> rank;    // a restarted server asks for its own
  int stats_every = 5;             // heartbeats between stats reports
  // Hyper-parameters a LayerSpec leaves at zero (proto3's "unset").
  OptimizerConfig default_optimizer;
};

// What registration told the server.
// A LayerSpec's optimizer, zero fields taken from `defaults`.
OptimizerConfig OptimizerFromSpec(const v1::OptimizerSpec& spec,
                                  const OptimizerConfig& defaults);

struct ServerRegistration {
  uint64_t job_id = 0;
  uint32_t rank = 0;
  uint32_t incarnation = 0;
  int32_t staleness = 0;  // -1: asynchronous
  uint32_t expected_workers = 0;
  absl::Duration heartbeat_interval;
};

class CoordinatorLink {
 public:
  // Registers, retrying until `deadline`.
  static absl::StatusOr<std::unique_ptr<CoordinatorLink>> Register(
      const CoordinatorLinkOptions& options, absl::Time deadline);
  ~CoordinatorLink();

  const ServerRegistration& registration() const { return registration_; }

  // Starts heartbeating on behalf of `core` (and `checkpointer`, which may
  // be null).
  void Start(ServerCore* core, Checkpointer* checkpointer);

 private:
  explicit CoordinatorLink(const CoordinatorLinkOptions& options);
  // Retries a coordinator that is not up until `deadline`.
  absl::Status RegisterOnce(absl::Time deadline);
  void Loop();
  void Act(const v1::HeartbeatResponse& reply);
  void SyncShardMap(uint64_t version);
  void ReportStats();

  const CoordinatorLinkOptions options_;
  CoordinatorClient client_;
  ServerRegistration registration_;
  ServerCore* core_ = nullptr;
  Checkpointer* checkpointer_ = nullptr;
  std::set<uint32_t> dead_;           // workers already told to leave
  uint64_t checkpoint_request_ = 0;   // the last one acted on
  uint64_t shard_map_version_ = 0;    // the last one declared
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_COORDINATOR_LINK_H_
