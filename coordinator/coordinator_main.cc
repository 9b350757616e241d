// leeway-coordinator: membership, shard map, compression plans, the admin
// API (gRPC) and /metrics for one job.
//
//   leeway-coordinator --listen=0.0.0.0:7100 --token_file=/etc/leeway/token
//       --workers=4 --servers=2 --staleness=2 --policy=adaptive
//
// Every flag --foo has an environment equivalent LEEWAY_FOO; the command
// line wins. Also serves the standard gRPC health service (open, for
// probes) and server reflection. SIGTERM or SIGINT stops it.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "coordinator/coordinator_metrics.h"
#include "coordinator/coordinator_service.h"
#include "coordinator/coordinator_state.h"
#include "core/common/main_init.h"
#include "core/common/health_server.h"
#include "core/common/logging.h"
#include "core/common/metrics_http.h"
#include "core/common/thread_name.h"
#include "core/common/token_file.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:7100", "gRPC host:port");
ABSL_FLAG(std::string, token_file, "", "file holding the cluster token");
ABSL_FLAG(uint64_t, job_id, 1, "job id");
ABSL_FLAG(std::string, staleness, "0", "SSP staleness bound, or async");
ABSL_FLAG(int, workers, 1, "workers the job expects");
ABSL_FLAG(int, servers, 1, "servers the job expects before the shard map is built");
ABSL_FLAG(uint64_t, chunk_bytes, 4 << 20,
          "largest chunk of a layer, 1 KiB to 16 MiB (its messages must fit the data plane's "
          "64 MiB)");
ABSL_FLAG(int, heartbeat_interval_ms, 1000, "how often members heartbeat");
ABSL_FLAG(int, heartbeat_timeout_ms, 5000, "silence after which a member is dead/down");
ABSL_FLAG(std::string, policy, "adaptive", "none, adaptive, fixed:<codec>[:<density>]");
ABSL_FLAG(int, plan_window, 50, "clocks between plans");
ABSL_FLAG(int, warmup, 0, "clocks of warm-up (density decays from dense)");
ABSL_FLAG(int, metrics_port, 9401, "Prometheus /metrics port (0: any, -1: off)");
ABSL_FLAG(std::string, ready_file, "", "write the gRPC port and metrics port here once up");

namespace leeway {
namespace {

volatile sig_atomic_t g_stop = 0;

int Fail(const absl::Status& status) {
  LEEWAY_LOG(ERROR) << status;
  return 2;
}

int Run() {
  absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
  if (!token.ok()) return Fail(token.status());
  absl::StatusOr<ControllerPolicy> policy = ParsePolicy(absl::GetFlag(FLAGS_policy));
  if (!policy.ok()) return Fail(policy.status());
  CoordinatorConfig config;
  config.job_id = absl::GetFlag(FLAGS_job_id);
  const std::string staleness = absl::GetFlag(FLAGS_staleness);
  if (staleness == "async") {
    config.staleness = -1;
  } else if (!absl::SimpleAtoi(staleness, &config.staleness) || config.staleness < 0) {
    return Fail(absl::InvalidArgumentError("--staleness must be a count >= 0 or async"));
  }
  if (absl::GetFlag(FLAGS_workers) < 1 || absl::GetFlag(FLAGS_servers) < 1 ||
      absl::GetFlag(FLAGS_heartbeat_interval_ms) < 1 ||
      absl::GetFlag(FLAGS_heartbeat_timeout_ms) < absl::GetFlag(FLAGS_heartbeat_interval_ms)) {
    return Fail(absl::InvalidArgumentError(
        "--workers and --servers must be >= 1, heartbeat timeout >= interval > 0"));
  }
  config.expected_workers = absl::GetFlag(FLAGS_workers);
  config.expected_servers = absl::GetFlag(FLAGS_servers);
  // A chunk travels whole: dense, or as pairs of up to twice its size, and
  // both must fit one data-plane message (WireLimits, 64 MiB).
  config.chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  if (config.chunk_bytes < (1u << 10) || config.chunk_bytes > (16u << 20)) {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--chunk_bytes must be 1024 to 16777216, not ", config.chunk_bytes)));
  }
  config.heartbeat_interval = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_interval_ms));
  config.heartbeat_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_heartbeat_timeout_ms));
  config.plan_window = std::max(1, absl::GetFlag(FLAGS_plan_window));
  config.controller.warmup = std::max(0, absl::GetFlag(FLAGS_warmup));

  CoordinatorState state(config, *policy, absl::Now());
  CoordinatorService coordinator(&state, *token);
  AdminService admin(&state, *token);
  EnableHealthService();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a taken port fails
  builder.AddListeningPort(absl::GetFlag(FLAGS_listen), grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&coordinator);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return Fail(absl::UnavailableError(
        absl::StrCat("cannot listen on ", absl::GetFlag(FLAGS_listen))));
  }
  std::unique_ptr<MetricsHttpServer> metrics;
  if (absl::GetFlag(FLAGS_metrics_port) >= 0) {
    auto started = MetricsHttpServer::Start(
        "0.0.0.0", static_cast<uint16_t>(absl::GetFlag(FLAGS_metrics_port)),
        [&state] { return RenderCoordinatorMetrics(state, absl::Now()); });
    if (!started.ok()) return Fail(started.status());
    metrics = std::move(*started);
  }
  server->GetHealthCheckService()->SetServingStatus(kReadinessService, true);
  LEEWAY_LOG(INFO) << "leeway-coordinator job " << config.job_id << " on port " << port
                   << ", expecting " << config.expected_workers << " workers and "
                   << config.expected_servers << " servers, policy "
                   << PolicyName(*policy);
  const std::string ready = absl::GetFlag(FLAGS_ready_file);
  if (!ready.empty()) {
    std::ofstream(ready + ".tmp") << port << "\n"
                                  << (metrics ? metrics->port() : -1) << "\n";
    std::rename((ready + ".tmp").c_str(), ready.c_str());
  }
  // Failure detection: sweep twice per heartbeat interval.
  absl::Notification stop;
  std::thread sweeper([&] {
    NameThisThread("lw-sweeper");
    while (!stop.WaitForNotificationWithTimeout(config.heartbeat_interval / 2)) {
      state.Sweep(absl::Now());
    }
  });
  signal(SIGTERM, [](int) { g_stop = 1; });
  signal(SIGINT, [](int) { g_stop = 1; });
  while (!g_stop) pause();
  LEEWAY_LOG(INFO) << "stopping";
  server->GetHealthCheckService()->Shutdown();
  stop.Notify();
  sweeper.join();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  leeway::InitMain(argc, argv);
  return leeway::Run();
}
