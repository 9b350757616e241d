#include "coordinator/coordinator_service.h"

#include "absl/time/clock.h"

namespace leeway {
namespace {

bool SameToken(const std::string& a, const std::string& b) {
  // Constant time in the token's length: no early exit on a mismatch.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Runs `fn` (returning absl::Status or StatusOr<T>) for an authenticated
// call and copies a value into *response.
template <typename Response, typename Fn>
grpc::Status Serve(const grpc::ServerContext* c, const std::string& token,
                   Response* response, Fn fn) {
  grpc::Status auth = Authenticate(c, token);
  if (!auth.ok()) return auth;
  auto result = fn();
  if constexpr (std::is_same_v<decltype(result), absl::Status>) {
    return ToGrpc(result);
  } else if constexpr (std::is_same_v<decltype(result), Response>) {
    *response = std::move(result);
    return grpc::Status::OK;
  } else {
    if (!result.ok()) return ToGrpc(result.status());
    *response = std::move(*result);
    return grpc::Status::OK;
  }
}

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status Authenticate(const grpc::ServerContext* context, const std::string& token) {
  const auto& metadata = context->client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "missing \"authorization: Bearer <token>\"");
  }
  const std::string value(it->second.data(), it->second.size());
  const std::string prefix = "Bearer ";
  if (value.compare(0, prefix.size(), prefix) != 0 ||
      !SameToken(value.substr(prefix.size()), token)) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "the token is not this cluster's");
  }
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Register(grpc::ServerContext* c,
                                          const v1::RegisterRequest* request,
                                          v1::RegisterResponse* response) {
  return Serve(c, token_, response, [&] { return state_->Register(*request, absl::Now()); });
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* c,
                                           const v1::HeartbeatRequest* request,
                                           v1::HeartbeatResponse* response) {
  return Serve(c, token_, response, [&] { return state_->Heartbeat(*request, absl::Now()); });
}

grpc::Status CoordinatorService::RegisterLayers(grpc::ServerContext* c,
                                                const v1::RegisterLayersRequest* request,
                                                v1::ShardMap* response) {
  return Serve(c, token_, response, [&] { return state_->RegisterLayers(*request); });
}

grpc::Status CoordinatorService::GetShardMap(grpc::ServerContext* c,
                                             const v1::GetShardMapRequest* request,
                                             v1::ShardMap* response) {
  return Serve(c, token_, response,
               [&] { return state_->GetShardMap(request->min_version()); });
}

grpc::Status CoordinatorService::GetMembers(grpc::ServerContext* c,
                                            const v1::GetMembersRequest*,
                                            v1::GetMembersResponse* response) {
  return Serve(c, token_, response, [&] { return state_->GetMembers(); });
}

grpc::Status CoordinatorService::ReportStats(grpc::ServerContext* c,
                                             const v1::StatsReport* request,
                                             v1::ReportStatsResponse* response) {
  return Serve(c, token_, response, [&] { return state_->ReportStats(*request); });
}

grpc::Status CoordinatorService::GetPlan(grpc::ServerContext* c, const v1::GetPlanRequest*,
                                         v1::CompressionPlan* response) {
  return Serve(c, token_, response, [&] { return state_->GetPlan(); });
}

grpc::Status AdminService::GetClusterStatus(grpc::ServerContext* c,
                                            const v1::ClusterStatusRequest*,
                                            v1::ClusterStatus* response) {
  return Serve(c, token_, response, [&] { return state_->ClusterStatus(absl::Now()); });
}

grpc::Status AdminService::GetStaleness(grpc::ServerContext* c, const v1::StalenessRequest*,
                                        v1::StalenessReport* response) {
  return Serve(c, token_, response, [&] { return state_->Staleness(); });
}

grpc::Status AdminService::GetThroughput(grpc::ServerContext* c,
                                         const v1::ThroughputRequest*,
                                         v1::ThroughputReport* response) {
  return Serve(c, token_, response, [&] { return state_->Throughput(); });
}

grpc::Status AdminService::GetLayerStats(grpc::ServerContext* c,
                                         const v1::LayerStatsRequest*,
                                         v1::LayerStatsReport* response) {
  return Serve(c, token_, response, [&] { return state_->LayerStats(); });
}

grpc::Status AdminService::SetCompressionPolicy(grpc::ServerContext* c,
                                                const v1::SetCompressionPolicyRequest* r,
                                                v1::CompressionPlan* response) {
  return Serve(c, token_, response, [&] { return state_->SetPolicy(r->policy()); });
}

grpc::Status AdminService::Pause(grpc::ServerContext* c, const v1::PauseRequest*,
                                 v1::PauseResponse* response) {
  return Serve(c, token_, response, [&] {
    v1::PauseResponse r;
    r.set_paused(state_->SetPaused(true));
    return r;
  });
}

grpc::Status AdminService::Resume(grpc::ServerContext* c, const v1::ResumeRequest*,
                                  v1::PauseResponse* response) {
  return Serve(c, token_, response, [&] {
    v1::PauseResponse r;
    r.set_paused(state_->SetPaused(false));
    return r;
  });
}

grpc::Status AdminService::Checkpoint(grpc::ServerContext* c, const v1::CheckpointRequest*,
                                      v1::CheckpointResponse* response) {
  return Serve(c, token_, response, [&] {
    v1::CheckpointResponse r;
    r.set_checkpoint_request_id(state_->RequestCheckpoint());
    return r;
  });
}

}  // namespace leeway
