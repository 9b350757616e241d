#include "core/common/health_server.h"

#include <chrono>

#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/strings/str_cat.h"

namespace leeway {

void EnableHealthService() { grpc::EnableDefaultHealthCheckService(true); }

absl::StatusOr<std::unique_ptr<HealthServer>> HealthServer::Start(const std::string& address) {
  EnableHealthService();
  grpc::ServerBuilder builder;
  // gRPC binds with SO_REUSEPORT by default: a second process would share
  // the port silently instead of failing.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("health service cannot listen on ", address));
  }
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  if (health == nullptr) {
    return absl::InternalError("gRPC built no health check service");
  }
  health->SetServingStatus(kReadinessService, false);
  return std::unique_ptr<HealthServer>(new HealthServer(std::move(server), port));
}

HealthServer::HealthServer(std::unique_ptr<grpc::Server> server, int port)
    : server_(std::move(server)), port_(port) {}

HealthServer::~HealthServer() { Shutdown(); }

void HealthServer::SetReady(bool ready) {
  if (server_ != nullptr) {
    server_->GetHealthCheckService()->SetServingStatus(kReadinessService, ready);
  }
}

void HealthServer::Shutdown() {
  if (server_ == nullptr) return;
  server_->GetHealthCheckService()->Shutdown();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  server_.reset();
}

}  // namespace leeway
