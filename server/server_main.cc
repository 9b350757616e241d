// leeway-server: one parameter-server shard.
//
//   leeway-server --listen=0.0.0.0:7000 --token_file=/etc/leeway/token
//       --staleness=2 --checkpoint_dir=/var/lib/leeway --threads=4
//
// Every flag has an environment equivalent (LEEWAY_LISTEN, LEEWAY_TOKEN_FILE,
// ...; --list_env prints them) for Kubernetes; the command line wins. Without
// --coordinator the server runs standalone: workers declare chunks with
// their initial values and a lost worker leaves the clock set. With one, it
// registers, takes the staleness and the expected workers from it, and
// follows its heartbeat replies (dead workers, checkpoint requests). SIGTERM or
// SIGINT stops it gracefully: no new messages, accepted pushes applied,
// then it exits 0 after printing its counters.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/common/exit_codes.h"
#include "core/common/file_text.h"
#include "core/common/main_init.h"
#include "core/common/health_server.h"
#include "core/common/logging.h"
#include "core/common/token_file.h"
#include "core/transport/transport.h"
#include "core/common/metrics_http.h"
#include "server/checkpointer.h"
#include "server/coordinator_link.h"
#include "server/data_service.h"
#include "server/server_core.h"
#include "server/server_metrics.h"

ABSL_FLAG(std::string, listen, "0.0.0.0:7000", "host:port to listen on");
ABSL_FLAG(std::string, coordinator, "", "coordinator host:port (empty: standalone)");
ABSL_FLAG(std::string, shard, "0", "this server's shard id, or auto");
ABSL_FLAG(std::string, advertise_host, "",
          "host name workers reach this server by (default: the host name)");
ABSL_FLAG(std::string, token_file, "", "file holding the cluster token");
ABSL_FLAG(uint64_t, job_id, 1, "job id (must match the workers')");
ABSL_FLAG(std::string, staleness, "0", "SSP staleness bound, or async");
ABSL_FLAG(int, workers, 0,
          "standalone: workers 0..N-1 the job expects (0: whoever joins)");
ABSL_FLAG(int, threads, 0, "apply threads (0: one per core)");
ABSL_FLAG(std::string, checkpoint_dir, "", "where checkpoints go (empty: none)");
ABSL_FLAG(double, checkpoint_interval, 300, "seconds between checkpoints (0: only at exit)");
ABSL_FLAG(int, checkpoint_keep, 3, "checkpoints kept");
ABSL_FLAG(std::string, optimizer, "sgd", "standalone: sgd, momentum, adam, adagrad");
ABSL_FLAG(float, learning_rate, 0.01f, "standalone: the optimizer's learning rate");
ABSL_FLAG(int, pull_timeout, 120, "seconds a pull may wait for slower workers");
ABSL_FLAG(int, peer_timeout_ms, 3000,
          "a worker connection silent this long is lost (raise it on saturated slow links, "
          "where keepalives queue behind bulk transfers)");
ABSL_FLAG(double, pull_density, 0,
          "0: pulls carry every changed element; in (0, 1): each clock the servers publish "
          "this fraction of a chunk's elements, those that changed most (top-k with error "
          "feedback; chunks under 4,096 elements stay exact)");
ABSL_FLAG(int, health_port, -1,
          "gRPC health service port for probes (0: any, -1: off); ready once serving");
ABSL_FLAG(int, metrics_port, 9400, "Prometheus /metrics port (0: any, -1: off)");
ABSL_FLAG(bool, exit_on_stall, true,
          "exit with code 75 (after a checkpoint, where they are kept) when the "
          "data plane stalls for good: a shared-memory FIFO stopped by a peer "
          "that died inside a send, which no co-located peer can then reach; "
          "leeway launch and Kubernetes start it again");
ABSL_FLAG(std::string, ready_file, "",
          "write port, worker address and metrics port here once up");

namespace leeway {
namespace {

volatile sig_atomic_t g_stop = 0;

// The data plane stalled for good (progress_loop.h): checkpoint, and exit
// at once, without the orderly shutdown that would wait on the stopped
// FIFO's endpoints.
[[noreturn]] void ExitStalled(Checkpointer* checkpointer, HealthServer* health) {
  LEEWAY_LOG(ERROR) << "the data plane stalled (a shared-memory peer died inside a send); "
                       "exiting with "
                    << kExitDataPlaneStalled << " so that this server is started again";
  if (health != nullptr) health->SetReady(false);
  if (checkpointer != nullptr) {
    absl::StatusOr<uint64_t> last = checkpointer->WriteNow();
    if (last.ok()) {
      LEEWAY_LOG(INFO) << "checkpoint " << *last << " written";
    } else {
      LEEWAY_LOG(ERROR) << "checkpoint before exiting failed: " << last.status();
    }
  }
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(kExitDataPlaneStalled);
}

absl::StatusOr<int64_t> ParseStaleness(const std::string& text) {
  if (text == "async") return SspTracker::kAsync;
  int64_t s = 0;
  if (!absl::SimpleAtoi(text, &s) || s < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--staleness must be a count >= 0 or async, not ", text));
  }
  return s;
}

absl::StatusOr<OptimizerKind> ParseOptimizer(const std::string& name) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum,
                             OptimizerKind::kAdam, OptimizerKind::kAdagrad}) {
    if (name == OptimizerName(kind)) return kind;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown optimizer ", name));
}

absl::Status WriteReadyFile(const std::string& path, uint16_t port,
                            const std::string& address, int metrics_port) {
  return WriteFileAtomically(path, absl::StrCat(port, "\n", absl::BytesToHexString(address),
                                                "\n", metrics_port, "\n"));
}

absl::StatusOr<std::unique_ptr<CoordinatorLink>> RegisterWithCoordinator(
    const std::string& token, uint16_t port, const std::string& ucx_address,
    std::optional<uint32_t> rank, const OptimizerConfig& optimizer) {
  CoordinatorLinkOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  options.token = token;
  std::string host = absl::GetFlag(FLAGS_advertise_host);
  if (host.empty()) {
    char name[256] = {};
    gethostname(name, sizeof(name) - 1);
    host = name;
  }
  options.host = host;
  options.data_address = absl::StrCat(host, ":", port);
  options.ucx_worker_address = ucx_address;
  options.rank = rank;
  options.default_optimizer = optimizer;
  return CoordinatorLink::Register(options, absl::Now() + absl::Seconds(60));
}

int Run() {
  absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
  absl::StatusOr<int64_t> staleness = ParseStaleness(absl::GetFlag(FLAGS_staleness));
  absl::StatusOr<OptimizerKind> optimizer = ParseOptimizer(absl::GetFlag(FLAGS_optimizer));
  uint32_t shard = 0;
  const std::vector<std::string> listen = absl::StrSplit(absl::GetFlag(FLAGS_listen), ':');
  int port = -1;
  for (const absl::Status& s : {token.status(), staleness.status(), optimizer.status()}) {
    if (!s.ok()) {
      LEEWAY_LOG(ERROR) << s;
      return 2;
    }
  }
  const std::string shard_flag = absl::GetFlag(FLAGS_shard);
  if (shard_flag != "auto" && !absl::SimpleAtoi(shard_flag, &shard)) {
    LEEWAY_LOG(ERROR) << "--shard must be a number or auto, not " << shard_flag;
    return 2;
  }
  if (listen.size() != 2 || !absl::SimpleAtoi(listen[1], &port) || port < 0 ||
      port > 65535) {
    LEEWAY_LOG(ERROR) << "--listen wants host:port";
    return 2;
  }

  std::unique_ptr<HealthServer> health;
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    absl::StatusOr<std::unique_ptr<HealthServer>> started =
        HealthServer::Start(absl::StrCat(listen[0], ":", absl::GetFlag(FLAGS_health_port)));
    if (!started.ok()) {
      LEEWAY_LOG(ERROR) << started.status();
      return 1;
    }
    health = std::move(*started);
  }
  TransportOptions topt;
  topt.job_id = absl::GetFlag(FLAGS_job_id);
  topt.rank = shard;
  topt.token = *token;
  topt.peer_timeout = absl::Milliseconds(std::max(100, absl::GetFlag(FLAGS_peer_timeout_ms)));
  absl::StatusOr<std::unique_ptr<Transport>> transport = Transport::Create(topt);
  if (!transport.ok()) {
    LEEWAY_LOG(ERROR) << transport.status();
    return 1;
  }
  absl::StatusOr<uint16_t> bound =
      (*transport)->Listen(listen[0], static_cast<uint16_t>(port));
  absl::StatusOr<std::string> address = (*transport)->WorkerAddress();
  if (!bound.ok() || !address.ok()) {
    LEEWAY_LOG(ERROR) << bound.status() << " " << address.status();
    return 1;
  }
  // With a coordinator, it decides the staleness, the workers and deaths.
  std::unique_ptr<CoordinatorLink> link;
  int expected_workers = absl::GetFlag(FLAGS_workers);
  if (!absl::GetFlag(FLAGS_coordinator).empty()) {
    absl::StatusOr<std::unique_ptr<CoordinatorLink>> registered = RegisterWithCoordinator(
        *token, *bound, *address,
        shard_flag == "auto" ? std::nullopt : std::optional<uint32_t>(shard),
        OptimizerConfig{*optimizer, absl::GetFlag(FLAGS_learning_rate)});
    if (!registered.ok()) {
      LEEWAY_LOG(ERROR) << registered.status();
      return 1;
    }
    link = std::move(*registered);
    const ServerRegistration& r = link->registration();
    if (r.job_id != topt.job_id) {
      LEEWAY_LOG(ERROR) << "the coordinator runs job " << r.job_id << ", this server "
                        << topt.job_id << " (--job_id)";
      return 2;
    }
    *staleness = r.staleness < 0 ? SspTracker::kAsync : r.staleness;
    expected_workers = static_cast<int>(r.expected_workers);
  }
  ServerCoreOptions copt;
  copt.staleness = *staleness;
  const double pull_density = absl::GetFlag(FLAGS_pull_density);
  if (!(pull_density >= 0 && pull_density < 1)) {
    LEEWAY_LOG(ERROR) << "--pull_density must be in [0, 1), not " << pull_density;
    return 2;
  }
  copt.chunk.pull_density = static_cast<float>(pull_density);
  if (pull_density > 0) {
    LEEWAY_LOG(INFO) << "top-k pulls: each clock, pulls get the " << pull_density
                     << " of a chunk that changed most (chunks of " << kSparsePullMinElements
                     << " elements or more)";
  }
  ServerCore core(copt);
  for (int rank = 0; rank < expected_workers; ++rank) core.Expect(rank);
  DataServiceOptions dopt;
  dopt.leave_on_peer_loss = link == nullptr;
  dopt.declare_on_initial_push = link == nullptr;  // else: the shard map
  dopt.apply_threads = absl::GetFlag(FLAGS_threads);
  dopt.max_pull_wait = absl::Seconds(absl::GetFlag(FLAGS_pull_timeout));
  dopt.default_optimizer.kind = *optimizer;
  dopt.default_optimizer.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  {
    absl::Status valid = ValidateOptimizer(dopt.default_optimizer);
    if (!valid.ok()) {
      LEEWAY_LOG(ERROR) << valid;
      return 2;
    }
  }
  std::unique_ptr<Checkpointer> checkpointer;
  const std::string checkpoint_dir = absl::GetFlag(FLAGS_checkpoint_dir);
  if (!checkpoint_dir.empty()) {
    checkpointer = std::make_unique<Checkpointer>(
        &core,
        std::make_unique<CheckpointStore>(checkpoint_dir,
                                          absl::GetFlag(FLAGS_checkpoint_keep)),
        absl::Seconds(absl::GetFlag(FLAGS_checkpoint_interval)));
    absl::Status restored = checkpointer->RestoreNewest();
    if (restored.code() == absl::StatusCode::kNotFound) {
      LEEWAY_LOG(INFO) << "no checkpoint in " << checkpoint_dir << ": a fresh start";
    } else if (!restored.ok()) {
      LEEWAY_LOG(ERROR) << "cannot restore from " << checkpoint_dir << ": " << restored;
      return 1;
    }
  }
  auto service = std::make_unique<DataService>(&core, transport->get(), dopt);
  service->Start();
  LEEWAY_LOG(INFO) << "leeway-server shard " << shard << " listening on "
                   << listen[0] << ":" << *bound << ", staleness "
                   << (*staleness < 0 ? std::string("async") : absl::StrCat(*staleness));
  std::unique_ptr<MetricsHttpServer> metrics;
  const int metrics_port = absl::GetFlag(FLAGS_metrics_port);
  if (metrics_port >= 0) {
    Transport* t = transport->get();
    auto started = MetricsHttpServer::Start(
        listen[0], static_cast<uint16_t>(metrics_port),
        [&core, t] { return RenderServerMetrics(core, t->stats()); });
    if (!started.ok()) {
      LEEWAY_LOG(ERROR) << started.status();
      return 1;
    }
    metrics = std::move(*started);
    LEEWAY_LOG(INFO) << "metrics on port " << metrics->port() << " (/metrics)";
  }
  const std::string ready = absl::GetFlag(FLAGS_ready_file);
  if (!ready.empty()) {
    absl::Status written = WriteReadyFile(ready, *bound, *address,
                                          metrics != nullptr ? metrics->port() : -1);
    if (!written.ok()) {
      LEEWAY_LOG(ERROR) << written;
      return 1;
    }
  }
  if (checkpointer != nullptr) checkpointer->Start();
  if (link != nullptr) link->Start(&core, checkpointer.get());
  if (health != nullptr) health->SetReady(true);
  signal(SIGTERM, [](int) { g_stop = 1; });
  signal(SIGINT, [](int) { g_stop = 1; });
  const bool exit_on_stall = absl::GetFlag(FLAGS_exit_on_stall);
  while (!g_stop) {
    if (exit_on_stall && (*transport)->stats().stalls > 0) {
      ExitStalled(checkpointer.get(), health.get());
    }
    ::usleep(200 * 1000);  // a signal ends it early
  }

  LEEWAY_LOG(INFO) << "stopping: applying accepted pushes";
  if (health != nullptr) health->SetReady(false);
  link.reset();
  service.reset();  // unhooks handlers, drains the apply pool
  if (checkpointer != nullptr) {
    absl::StatusOr<uint64_t> last = checkpointer->WriteNow();
    if (!last.ok()) {
      LEEWAY_LOG(ERROR) << "final checkpoint failed: " << last.status();
      return 1;
    }
    checkpointer.reset();
  }
  const HistogramSnapshot staleness_seen = core.Staleness();
  std::printf("STATS pushes_applied=%llu bad_messages=%llu staleness_max=%.0f "
              "staleness_mean=%.3f\n",
              static_cast<unsigned long long>(core.pushes_applied()),
              static_cast<unsigned long long>(core.bad_messages()),
              staleness_seen.max, staleness_seen.Mean());
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  leeway::InitMain(argc, argv);
  return leeway::Run();
}
