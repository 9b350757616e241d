// The standard gRPC health service (grpc.health.v1.Health) on a port of its
// own, for Kubernetes' gRPC probes on roles whose data plane is not gRPC
// (server, worker). The overall service "" answers SERVING while the process
// runs (liveness); the service "ready" answers NOT_SERVING until SetReady(true)
// (readiness). Shutdown (or the destructor) stops it within a second.
#ifndef LEEWAY_CORE_COMMON_HEALTH_SERVER_H_
#define LEEWAY_CORE_COMMON_HEALTH_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class Server;
}

namespace leeway {

// The readiness service's name in probes (`grpc: {port, service: ready}`).
inline constexpr char kReadinessService[] = "ready";

class HealthServer {
 public:
  // `address` is host:port; port 0 picks a free one.
  static absl::StatusOr<std::unique_ptr<HealthServer>> Start(const std::string& address);
  ~HealthServer();

  int port() const { return port_; }
  void SetReady(bool ready);
  void Shutdown();

 private:
  HealthServer(std::unique_ptr<grpc::Server> server, int port);

  std::unique_ptr<grpc::Server> server_;
  int port_;
};

// Enables the health service on every gRPC server built after it (the
// coordinator's main server calls this too). Idempotent.
void EnableHealthService();

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_HEALTH_SERVER_H_
