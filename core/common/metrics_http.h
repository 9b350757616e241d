// A minimal HTTP/1.0 endpoint for Prometheus: GET /metrics answers with the
// text a callback renders (prometheus_text.h), GET /healthz with "ok",
// anything else with 404 (or 400 for what is not HTTP). One thread; each
// request must arrive whole within 2 s and 8 KiB, or its connection is
// closed, so a stuck client delays a scrape by 2 s at most and never
// stops the server. Thread-safe to construct and destroy.
#ifndef LEEWAY_CORE_COMMON_METRICS_HTTP_H_
#define LEEWAY_CORE_COMMON_METRICS_HTTP_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace leeway {

class MetricsHttpServer {
 public:
  using Render = std::function<std::string()>;

  // Listens on host:port (port 0 picks one).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, uint16_t port, Render render);
  ~MetricsHttpServer();

  uint16_t port() const { return port_; }

 private:
  MetricsHttpServer(int fd, uint16_t port, Render render);
  void Loop();
  void Serve(int client);

  const int listen_fd_;
  const uint16_t port_;
  const Render render_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_METRICS_HTTP_H_
