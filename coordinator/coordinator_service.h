// The coordinator's gRPC services over CoordinatorState: Coordinator (for
// servers and workers) and Admin (for operators and the `leeway` CLI).
// Every call must carry "authorization: Bearer <token>" with the cluster
// token, else UNAUTHENTICATED (compared in constant time); bad requests get
// INVALID_ARGUMENT with a message. The gRPC health service stays open for
// probes (it is registered by the binary, outside these services).
#ifndef LEEWAY_COORDINATOR_COORDINATOR_SERVICE_H_
#define LEEWAY_COORDINATOR_COORDINATOR_SERVICE_H_

#include <string>

#include <grpcpp/grpcpp.h>

#include "admin.grpc.pb.h"
#include "coordinator.grpc.pb.h"
#include "coordinator/coordinator_state.h"

namespace leeway {

// absl::Status -> grpc::Status, code and message kept.
grpc::Status ToGrpc(const absl::Status& status);

// Checks the bearer token of a call.
grpc::Status Authenticate(const grpc::ServerContext* context, const std::string& token);

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  CoordinatorService(CoordinatorState* state, std::string token)
      : state_(state), token_(std::move(token)) {}

  grpc::Status Register(grpc::ServerContext* c, const v1::RegisterRequest* request,
                        v1::RegisterResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* c, const v1::HeartbeatRequest* request,
                         v1::HeartbeatResponse* response) override;
  grpc::Status RegisterLayers(grpc::ServerContext* c,
                              const v1::RegisterLayersRequest* request,
                              v1::ShardMap* response) override;
  grpc::Status GetShardMap(grpc::ServerContext* c, const v1::GetShardMapRequest* request,
                           v1::ShardMap* response) override;
  grpc::Status GetMembers(grpc::ServerContext* c, const v1::GetMembersRequest* request,
                          v1::GetMembersResponse* response) override;
  grpc::Status ReportStats(grpc::ServerContext* c, const v1::StatsReport* request,
                           v1::ReportStatsResponse* response) override;
  grpc::Status GetPlan(grpc::ServerContext* c, const v1::GetPlanRequest* request,
                       v1::CompressionPlan* response) override;

 private:
  CoordinatorState* const state_;
  const std::string token_;
};

class AdminService final : public v1::Admin::Service {
 public:
  AdminService(CoordinatorState* state, std::string token)
      : state_(state), token_(std::move(token)) {}

  grpc::Status GetClusterStatus(grpc::ServerContext* c, const v1::ClusterStatusRequest* r,
                                v1::ClusterStatus* response) override;
  grpc::Status GetStaleness(grpc::ServerContext* c, const v1::StalenessRequest* r,
                            v1::StalenessReport* response) override;
  grpc::Status GetThroughput(grpc::ServerContext* c, const v1::ThroughputRequest* r,
                             v1::ThroughputReport* response) override;
  grpc::Status GetLayerStats(grpc::ServerContext* c, const v1::LayerStatsRequest* r,
                             v1::LayerStatsReport* response) override;
  grpc::Status SetCompressionPolicy(grpc::ServerContext* c,
                                    const v1::SetCompressionPolicyRequest* r,
                                    v1::CompressionPlan* response) override;
  grpc::Status Pause(grpc::ServerContext* c, const v1::PauseRequest* r,
                     v1::PauseResponse* response) override;
  grpc::Status Resume(grpc::ServerContext* c, const v1::ResumeRequest* r,
                      v1::PauseResponse* response) override;
  grpc::Status Checkpoint(grpc::ServerContext* c, const v1::CheckpointRequest* r,
                          v1::CheckpointResponse* response) override;

 private:
  CoordinatorState* const state_;
  const std::string token_;
};

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_COORDINATOR_SERVICE_H_
