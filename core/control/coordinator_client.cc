#include "core/control/coordinator_client.h"

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"

namespace leeway {

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

CoordinatorClient::CoordinatorClient(const std::string& address, std::string token,
                                     absl::Duration timeout)
    : address_(address),
      token_(std::move(token)),
      timeout_(timeout),
      stub_(v1::Coordinator::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

template <typename Request, typename Response, typename Method>
absl::StatusOr<Response> CoordinatorClient::Invoke(Method method, const Request& request,
                                                   absl::Duration timeout) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token_);
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(timeout));
  Response response;
  absl::Status status = FromGrpc((stub_.get()->*method)(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::RegisterResponse> CoordinatorClient::Register(
    const v1::RegisterRequest& request) {
  return Invoke<v1::RegisterRequest, v1::RegisterResponse>(&v1::Coordinator::Stub::Register,
                                                           request, timeout_);
}

absl::StatusOr<v1::RegisterResponse> CoordinatorClient::RegisterWithRetry(
    const v1::RegisterRequest& request, absl::Time deadline) {
  while (true) {
    absl::StatusOr<v1::RegisterResponse> response = Register(request);
    if (response.ok()) return response;
    const absl::StatusCode code = response.status().code();
    // A process restarted under its old rank waits for the coordinator to
    // declare its previous incarnation dead.
    const bool transient =
        code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded ||
        (code == absl::StatusCode::kAlreadyExists && request.has_requested_rank());
    if (!transient || absl::Now() >= deadline) {
      return absl::Status(code, absl::StrCat("cannot register with the coordinator at ",
                                             address_, ": ", response.status().message()));
    }
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 5) << "coordinator at " << address_
                                       << " not ready: " << response.status() << "; retrying";
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::StatusOr<v1::HeartbeatResponse> CoordinatorClient::Heartbeat(
    const v1::HeartbeatRequest& request, absl::Duration timeout) {
  return Invoke<v1::HeartbeatRequest, v1::HeartbeatResponse>(
      &v1::Coordinator::Stub::Heartbeat, request, timeout);
}

absl::StatusOr<v1::ShardMap> CoordinatorClient::RegisterLayers(
    const v1::RegisterLayersRequest& request) {
  return Invoke<v1::RegisterLayersRequest, v1::ShardMap>(
      &v1::Coordinator::Stub::RegisterLayers, request, timeout_);
}

absl::StatusOr<v1::ShardMap> CoordinatorClient::GetShardMap(uint64_t min_version) {
  v1::GetShardMapRequest request;
  request.set_min_version(min_version);
  return Invoke<v1::GetShardMapRequest, v1::ShardMap>(&v1::Coordinator::Stub::GetShardMap,
                                                      request, timeout_);
}

absl::StatusOr<v1::GetMembersResponse> CoordinatorClient::GetMembers() {
  return Invoke<v1::GetMembersRequest, v1::GetMembersResponse>(
      &v1::Coordinator::Stub::GetMembers, v1::GetMembersRequest(), timeout_);
}

absl::StatusOr<v1::CompressionPlan> CoordinatorClient::GetPlan(uint64_t known_version) {
  v1::GetPlanRequest request;
  request.set_known_version(known_version);
  return Invoke<v1::GetPlanRequest, v1::CompressionPlan>(&v1::Coordinator::Stub::GetPlan,
                                                         request, timeout_);
}

absl::StatusOr<v1::ReportStatsResponse> CoordinatorClient::ReportStats(
    const v1::StatsReport& report) {
  return Invoke<v1::StatsReport, v1::ReportStatsResponse>(&v1::Coordinator::Stub::ReportStats,
                                                          report, timeout_);
}

}  // namespace leeway
