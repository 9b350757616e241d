// The control-plane calls that servers and workers make to the coordinator
// (proto/coordinator.proto), each with the cluster token as bearer metadata
// and a deadline, returning absl::Status. RegisterWithRetry retries while
// the coordinator is not up yet, and while the rank a restarted process
// asks for is still held by its previous incarnation (until the
// coordinator declares it dead); it gives up at once on what retrying
// cannot fix (a wrong token, a bad request).
// Thread-safe (gRPC stubs are).
#ifndef LEEWAY_CORE_CONTROL_COORDINATOR_CLIENT_H_
#define LEEWAY_CORE_CONTROL_COORDINATOR_CLIENT_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator.grpc.pb.h"

namespace leeway {

absl::Status FromGrpc(const grpc::Status& status);

class CoordinatorClient {
 public:
  CoordinatorClient(const std::string& address, std::string token,
                    absl::Duration timeout = absl::Seconds(5));

  const std::string& address() const { return address_; }

  absl::StatusOr<v1::RegisterResponse> Register(const v1::RegisterRequest& request);
  // Retries UNAVAILABLE and DEADLINE_EXCEEDED, and ALREADY_EXISTS for a
  // requested rank, until `deadline`.
  absl::StatusOr<v1::RegisterResponse> RegisterWithRetry(const v1::RegisterRequest& request,
                                                         absl::Time deadline);
  absl::StatusOr<v1::HeartbeatResponse> Heartbeat(const v1::HeartbeatRequest& request,
                                                  absl::Duration timeout);
  absl::StatusOr<v1::ShardMap> RegisterLayers(const v1::RegisterLayersRequest& request);
  absl::StatusOr<v1::ShardMap> GetShardMap(uint64_t min_version);
  absl::StatusOr<v1::GetMembersResponse> GetMembers();
  absl::StatusOr<v1::CompressionPlan> GetPlan(uint64_t known_version);
  absl::StatusOr<v1::ReportStatsResponse> ReportStats(const v1::StatsReport& report);

 private:
  template <typename Request, typename Response, typename Method>
  absl::StatusOr<Response> Invoke(Method method, const Request& request,
                                  absl::Duration timeout);

  const std::string address_;
  const std::string token_;
  const absl::Duration timeout_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_CONTROL_COORDINATOR_CLIENT_H_
