#include "cli/launch.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "cli/child_process.h"
#include "cli/launch_report.h"
#include "cli/placement.h"
#include "core/common/exit_codes.h"
#include "core/common/file_text.h"

namespace leeway {
namespace {

volatile sig_atomic_t g_interrupted = 0;

constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kStopGrace = absl::Seconds(5);
// A server whose data plane stalled is started again this many times.
constexpr int kMaxServerRestarts = 3;

std::string BinDir(const LaunchOptions& o) {
  if (!o.bin_dir.empty()) return o.bin_dir;
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return ".";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// leeway-<role> next to this binary (installed) or in Bazel's layout
// (bazel-bin/cli/leeway, bazel-bin/<package>/leeway-<role>).
std::string FindBinary(const std::string& dir, const std::string& package,
                       const std::string& name) {
  for (const std::string& candidate :
       {dir + "/" + name, dir + "/../" + package + "/" + name}) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return dir + "/" + name;
}

std::string RunName(const LaunchOptions& o) {
  const std::string consistency = o.staleness == "async" ? "ASP"
                                  : o.staleness == "0"   ? "BSP"
                                                         : "SSP s=" + o.staleness;
  std::string name = absl::StrCat(consistency, ", ", o.compression);
  if (!o.profile.empty()) absl::StrAppend(&name, ", ", o.profile);
  if (o.pull_density > 0) absl::StrAppend(&name, ", pulls top-k ", o.pull_density);
  if (!o.overlap) absl::StrAppend(&name, ", no overlap");
  return name;
}

class Cluster {
 public:
  explicit Cluster(const LaunchOptions& o) : o_(o) {}
  ~Cluster() { StopAll(); }

  int Run();

 private:
  absl::Status Prepare();
  absl::StatusOr<std::string> WaitReady(ChildProcess& child, const std::string& ready);
  absl::Status StartAll();
  // Returns when every worker has exited 0 (OK), a child failed, or the
  // launch was interrupted.
  absl::Status Supervise();
  void ShowProgress(bool final_line);
  std::string Describe(ChildProcess& child, int code);
  // Starts server `i` again after it exited with kExitDataPlaneStalled;
  // false (and why, in *why) once it has been restarted kMaxServerRestarts
  // times or cannot be.
  bool RestartStalledServer(size_t i, std::string* why);
  void StopAll();
  int Finish();

  template <typename Response, typename Method, typename Request>
  absl::StatusOr<Response> Ask(Method method, const Request& request);

  const LaunchOptions& o_;
  std::string dir_, token_, coordinator_, bin_;
  std::unique_ptr<ChildProcess> coordinator_process_;
  std::vector<std::unique_ptr<ChildProcess>> servers_, workers_;
  std::map<std::string, std::string> env_;
  std::vector<std::vector<std::string>> server_argv_;
  std::vector<int> server_restarts_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  absl::Time start_;
  int progress_lines_ = 0;
  double staleness_p99_ = 0;
};

template <typename Response, typename Method, typename Request>
absl::StatusOr<Response> Cluster::Ask(Method method, const Request& request) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token_);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  Response response;
  grpc::Status s = (admin_.get()->*method)(&context, request, &response);
  if (!s.ok()) return absl::UnavailableError(s.error_message());
  return response;
}

absl::Status Cluster::Prepare() {
  if (o_.servers < 1 || o_.workers < 1 || o_.clocks < 1) {
    return absl::InvalidArgumentError("--servers, --workers and --clocks must be at least 1");
  }
  if (o_.transport != "sm" && o_.transport != "tcp") {
    return absl::InvalidArgumentError("--transport must be sm or tcp");
  }
  if (o_.model != "mlp") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --model ", o_.model, " (mlp)"));
  }
  int64_t s = 0;
  if (o_.staleness != "async" && (!absl::SimpleAtoi(o_.staleness, &s) || s < 0)) {
    return absl::InvalidArgumentError("--staleness must be a count >= 0 or async");
  }
  if (o_.peer_timeout_ms < 0) return absl::InvalidArgumentError("--peer-timeout-ms must be >= 0");
  if (o_.push_batch_kib < 0 || o_.push_batch_kib > (16 << 10) || o_.pull_batch_kib < 0 ||
      o_.pull_batch_kib > (16 << 10)) {
    return absl::InvalidArgumentError(
        "--push-batch-kib and --pull-batch-kib must be in [0, 16384]");
  }
  if (o_.warmup_clocks < 0 || o_.warmup_clocks >= o_.clocks) {
    return absl::InvalidArgumentError("--warmup-clocks must be in [0, --clocks)");
  }
  if (!(o_.pull_density >= 0 && o_.pull_density < 1)) {
    return absl::InvalidArgumentError("--pull-density must be in [0, 1)");
  }
  absl::Status placed = CheckPlacement(o_.netns, o_.servers, o_.workers);
  if (!placed.ok()) return placed;
  if (!o_.profile.empty() && (o_.gpu_ms < 0 || o_.straggler <= 0 || o_.jitter < 0 || o_.jitter >= 1)) {
    return absl::InvalidArgumentError("need --gpu-ms >= 0, --straggler > 0, 0 <= --jitter < 1");
  }
  if (o_.gradients != "host" && o_.gradients != "device") {
    return absl::InvalidArgumentError("--gradients is host or device");
  }
  for (const char* f : {"/train-images-idx3-ubyte", "/t10k-labels-idx1-ubyte"}) {
    if (!o_.profile.empty()) break;  // no data
    if (::access((o_.data_dir + f).c_str(), R_OK) != 0) {
      return absl::NotFoundError(absl::StrCat("no MNIST data in ", o_.data_dir,
                                              " (deploy/fetch-mnist.sh makes it)"));
    }
  }
  dir_ = o_.run_dir;
  if (dir_.empty()) {
    char tmpl[] = "/tmp/leeway-launch-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return absl::InternalError("cannot make a run directory");
    dir_ = tmpl;
  } else if (::access(dir_.c_str(), W_OK) != 0 && ::mkdir(dir_.c_str(), 0755) != 0) {
    return absl::InternalError(absl::StrCat("cannot make ", dir_));
  }
  // A run directory used before: what the last run left would be read as
  // this run's (ready files with old ports, appended histories).
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, error)) {
    const std::string ext = entry.path().extension().string();
    if (ext == ".ready" || ext == ".json" || ext == ".history") {
      std::filesystem::remove(entry.path(), error);
    }
  }
  std::ifstream random("/dev/urandom", std::ios::binary);
  char bytes[24];
  random.read(bytes, sizeof(bytes));
  for (unsigned char b : std::string(bytes, sizeof(bytes))) absl::StrAppendFormat(&token_, "%02x", b);
  std::ofstream(dir_ + "/token") << token_ << "\n";
  ::chmod((dir_ + "/token").c_str(), 0600);
  bin_ = BinDir(o_);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Cluster::WaitReady(ChildProcess& child, const std::string& ready) {
  const absl::Time until = absl::Now() + kStartTimeout;
  while (absl::Now() < until && !g_interrupted) {
    if (::access(ready.c_str(), R_OK) == 0) return ReadFileOrEmpty(ready);
    if (std::optional<int> code = child.Poll()) {
      return absl::UnavailableError(Describe(child, *code));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(child.name(), " did not start within ",
                                                  absl::FormatDuration(kStartTimeout), "\n",
                                                  child.LastLines(10)));
}

std::string Cluster::Describe(ChildProcess& child, int code) {
  return absl::StrCat(child.name(), " exited with ", code, " (log ", child.log_path(),
                      "); its last lines:\n", child.LastLines(12));
}

absl::Status Cluster::StartAll() {
  env_ = UcxEnvironment(o_.netns, o_.transport);
  env_["OPENBLAS_NUM_THREADS"] = "1";
  const std::map<std::string, std::string>& env = env_;
  const std::string token_file = dir_ + "/token";
  const Placement coordinator_place = PlaceRole(o_.netns, Role::kCoordinator, 0);
  const int liveness_ms =
      o_.peer_timeout_ms > 0 ? o_.peer_timeout_ms : (o_.netns.empty() ? 0 : 30000);
  std::vector<std::string> coordinator = {
      FindBinary(bin_, "coordinator", "leeway-coordinator"),
      "--listen=" + coordinator_place.host + ":0",
      "--token_file=" + token_file, absl::StrCat("--workers=", o_.workers),
      absl::StrCat("--servers=", o_.servers), "--staleness=" + o_.staleness,
      "--policy=" + o_.compression, "--heartbeat_interval_ms=200",
      absl::StrCat("--plan_window=", o_.plan_window), "--metrics_port=-1",
      "--ready_file=" + dir_ + "/coordinator.ready"};
  // Servers and workers get the same bound for their connections.
  std::vector<std::string> liveness;
  if (liveness_ms > 0) {
    coordinator.push_back(absl::StrCat("--heartbeat_timeout_ms=", liveness_ms));
    liveness.push_back(absl::StrCat("--peer_timeout_ms=", liveness_ms));
  }
  auto started = ChildProcess::Start("coordinator", coordinator, env, dir_ + "/coordinator.log");
  if (!started.ok()) return started.status();
  coordinator_process_ = *std::move(started);
  absl::StatusOr<std::string> ready =
      WaitReady(*coordinator_process_, dir_ + "/coordinator.ready");
  if (!ready.ok()) return ready.status();
  coordinator_ = absl::StrCat(coordinator_place.host, ":",
                              std::vector<std::string>(absl::StrSplit(*ready, '\n'))[0]);
  admin_ = v1::Admin::NewStub(grpc::CreateChannel(coordinator_, grpc::InsecureChannelCredentials()));
  for (int i = 0; i < o_.servers; ++i) {
    const Placement place = PlaceRole(o_.netns, Role::kServer, i);
    std::vector<std::string> argv = place.command;
    for (std::string arg :
         {FindBinary(bin_, "server", "leeway-server"), "--listen=" + place.host + ":0",
          "--coordinator=" + coordinator_, "--token_file=" + token_file,
          absl::StrCat("--shard=", i), "--advertise_host=" + place.host, std::string("--threads=1"),
          std::string("--metrics_port=-1"), absl::StrCat("--pull_density=", o_.pull_density),
          absl::StrCat("--ready_file=", dir_, "/server", i, ".ready")}) {
      argv.push_back(arg);
    }
    argv.insert(argv.end(), liveness.begin(), liveness.end());
    auto server = ChildProcess::Start(absl::StrCat("server ", i), argv, env,
                                      absl::StrCat(dir_, "/server", i, ".log"));
    if (!server.ok()) return server.status();
    servers_.push_back(*std::move(server));
    server_argv_.push_back(argv);
    server_restarts_.push_back(0);
  }
  for (int i = 0; i < o_.servers; ++i) {
    absl::StatusOr<std::string> up =
        WaitReady(*servers_[i], absl::StrCat(dir_, "/server", i, ".ready"));
    if (!up.ok()) return up.status();
  }
  for (int i = 0; i < o_.workers; ++i) {
    const Placement place = PlaceRole(o_.netns, Role::kWorker, i);
    std::vector<std::string> argv = place.command;
    const bool tcp = o_.transport == "tcp" || !o_.netns.empty();
    argv.insert(argv.end(), {
        FindBinary(bin_, "worker", "leeway-worker"), "--coordinator=" + coordinator_,
        "--token_file=" + token_file, absl::StrCat("--rank=", i),
        "--advertise_host=" + place.host, tcp ? "--connect=sockaddr" : "--connect=address",
        absl::StrCat("--batch=", o_.batch), absl::StrCat("--clocks=", o_.clocks),
        absl::StrCat("--learning_rate=", o_.learning_rate), absl::StrCat("--seed=", o_.seed),
        absl::StrCat("--log_every=", o_.log_every),
        absl::StrCat("--warmup_clocks=", o_.warmup_clocks),
        absl::StrCat("--result_file=", dir_, "/worker", i, ".json"),
        absl::StrCat("--ready_file=", dir_, "/worker", i, ".ready"),
        absl::StrCat("--history_file=", dir_, "/worker", i, ".history")});
    if (!o_.overlap) argv.push_back("--overlap=false");
    argv.push_back(absl::StrCat("--push_batch_kib=", o_.push_batch_kib));
    argv.push_back(absl::StrCat("--pull_batch_kib=", o_.pull_batch_kib));
    argv.push_back("--gradients=" + o_.gradients);
    if (o_.profile.empty()) {
      argv.push_back("--data_dir=" + o_.data_dir);
      argv.push_back("--hidden=" + o_.hidden);
    } else {
      argv.push_back("--profile=" + o_.profile);
      argv.push_back(absl::StrCat("--gpu_ms=", o_.gpu_ms));
      argv.push_back(absl::StrCat("--jitter=", o_.jitter));
      argv.push_back(absl::StrCat("--slowdown=", i == o_.workers - 1 ? o_.straggler : 1.0));
    }
    argv.insert(argv.end(), liveness.begin(), liveness.end());
    auto worker = ChildProcess::Start(absl::StrCat("worker ", i), argv, env,
                                      absl::StrCat(dir_, "/worker", i, ".log"));
    if (!worker.ok()) return worker.status();
    workers_.push_back(*std::move(worker));
  }
  return absl::OkStatus();
}

// The loss in a worker's latest progress line ("... loss 0.1234 ...").
std::string LatestLoss(const ChildProcess& worker) {
  std::string loss = "-";
  std::ifstream in(worker.log_path());
  std::string line;
  while (std::getline(in, line)) {
    const size_t at = line.find(" loss ");
    if (line.rfind("worker ", 0) == 0 && at != std::string::npos) {
      loss = line.substr(at + 6, line.find(' ', at + 6) - at - 6);
    }
  }
  return loss;
}

void Cluster::ShowProgress(bool final_line) {
  const bool tty = ::isatty(STDERR_FILENO);
  absl::StatusOr<v1::ClusterStatus> status =
      Ask<v1::ClusterStatus>(&v1::Admin::Stub::GetClusterStatus, v1::ClusterStatusRequest());
  absl::StatusOr<v1::ThroughputReport> throughput =
      Ask<v1::ThroughputReport>(&v1::Admin::Stub::GetThroughput, v1::ThroughputRequest());
  absl::StatusOr<v1::StalenessReport> staleness =
      Ask<v1::StalenessReport>(&v1::Admin::Stub::GetStaleness, v1::StalenessRequest());
  if (staleness.ok()) staleness_p99_ = staleness->overall().p99();
  std::map<uint32_t, uint32_t> clocks;
  if (status.ok()) {
    for (const v1::Member& m : status->members()) {
      if (m.role() == v1::ROLE_WORKER) clocks[m.rank()] = m.clock();
    }
  }
  std::map<uint32_t, double> rates;
  if (throughput.ok()) {
    for (const v1::RoleThroughput& m : throughput->members()) {
      if (m.role() == v1::ROLE_WORKER) rates[m.rank()] = m.samples_per_sec();
    }
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  std::vector<std::string> lines;
  lines.push_back(absl::StrFormat(
      "%5.1fs  staleness p99 %.1f (bound %s)  %.2f MB/s  compression %.1fx  comm %.0f%%",
      seconds, staleness_p99_, o_.staleness, throughput.ok() ? throughput->bytes_per_sec() / 1e6 : 0,
      throughput.ok() && throughput->compression_ratio() > 0 ? throughput->compression_ratio() : 1.0,
      throughput.ok() ? 100 * throughput->comm_share() : 0));
  for (int i = 0; i < o_.workers; ++i) {
    lines.push_back(absl::StrFormat("  worker %d  clock %5u/%d  loss %-8s %7.0f samples/s", i,
                                    clocks[i], o_.clocks, LatestLoss(*workers_[i]), rates[i]));
  }
  if (tty) {
    if (progress_lines_ > 0) std::fprintf(stderr, "\033[%dA", progress_lines_);
    for (const std::string& l : lines) std::fprintf(stderr, "\033[K%s\n", l.c_str());
    progress_lines_ = static_cast<int>(lines.size());
  } else if (final_line || static_cast<int>(seconds) % 5 == 0) {
    std::string joined = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) absl::StrAppend(&joined, " |", lines[i].substr(1));
    std::fprintf(stderr, "%s\n", joined.c_str());
  }
  std::fflush(stderr);
}

absl::Status Cluster::Supervise() {
  absl::Time next_display = absl::Now();
  while (!g_interrupted) {
    bool all_done = true;
    for (auto* group : {&workers_, &servers_}) {
      for (size_t i = 0; i < group->size(); ++i) {
        ChildProcess& child = *(*group)[i];
        std::optional<int> code = child.Poll();
        const bool is_worker = group == &workers_;
        std::string why;
        if (code == kExitDataPlaneStalled && !is_worker && RestartStalledServer(i, &why)) {
          continue;  // the workers find it again through the coordinator
        }
        if (code.has_value() && (*code != 0 || !is_worker)) {
          return absl::AbortedError(Describe(child, *code) + why);
        }
        if (is_worker && !code.has_value()) all_done = false;
      }
    }
    if (std::optional<int> code = coordinator_process_->Poll()) {
      return absl::AbortedError(Describe(*coordinator_process_, *code));
    }
    if (all_done) {
      ShowProgress(true);
      return absl::OkStatus();
    }
    if (absl::Now() >= next_display) {
      ShowProgress(false);
      next_display += absl::Seconds(1);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::CancelledError("interrupted");
}

bool Cluster::RestartStalledServer(size_t i, std::string* why) {
  if (server_restarts_[i] >= kMaxServerRestarts) {
    *why = absl::StrCat("\n(its data plane stalled; restarted ", kMaxServerRestarts,
                        " times already)");
    return false;
  }
  ++server_restarts_[i];
  std::fprintf(stderr,
               "leeway launch: server %zu stopped: its data plane stalled (a shared-memory "
               "peer died inside a send; log %s); starting it again (%d of %d)\n",
               i, servers_[i]->log_path().c_str(), server_restarts_[i], kMaxServerRestarts);
  std::remove(absl::StrCat(dir_, "/server", i, ".ready").c_str());
  auto server = ChildProcess::Start(
      absl::StrCat("server ", i), server_argv_[i], env_,
      absl::StrCat(dir_, "/server", i, ".restart", server_restarts_[i], ".log"));
  if (!server.ok()) {
    *why = absl::StrCat("\n(restarting it failed: ", server.status().message(), ")");
    return false;
  }
  servers_[i] = *std::move(server);
  return true;
}

void Cluster::StopAll() {
  for (auto& w : workers_) ::kill(w->pid(), SIGTERM);
  for (auto& w : workers_) w->Stop(kStopGrace);
  for (auto& s : servers_) s->Stop(kStopGrace);
  if (coordinator_process_) coordinator_process_->Stop(kStopGrace);
}

int Cluster::Finish() {
  std::vector<WorkerResult> results;
  for (int i = 0; i < o_.workers; ++i) {
    absl::StatusOr<WorkerResult> r = ParseWorkerResult(ReadFileOrEmpty(absl::StrCat(dir_, "/worker", i, ".json")));
    if (!r.ok()) {
      std::fprintf(stderr, "leeway launch: worker %d left no result: %s\n", i,
                   std::string(r.status().message()).c_str());
      return 1;
    }
    results.push_back(*r);
  }
  LaunchSummary summary = Summarize(results);
  summary.run = RunName(o_);
  summary.servers = o_.servers;
  summary.staleness_p99 = staleness_p99_;
  summary.seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  const std::string json = SummaryJson(summary);
  std::ofstream(dir_ + "/report.json") << json << "\n";
  if (!o_.plot.empty()) {
    // An existing plot keeps its runs: one line per run.
    std::vector<PlotSeries> series = PlotSeriesIn(ReadFileOrEmpty(o_.plot));
    series.push_back({summary.run, ParseHistory(ReadFileOrEmpty(dir_ + "/worker0.history"))});
    std::ofstream plot(o_.plot);
    plot << PlotSvg(series);
    if (!plot) std::fprintf(stderr, "leeway launch: cannot write %s\n", o_.plot.c_str());
  }
  if (o_.json) {
    std::printf("%s\n", json.c_str());
  } else {
    std::printf("%s", SummaryTable(summary).c_str());
    std::printf("run directory: %s (logs, report.json)%s%s\n", dir_.c_str(),
                o_.plot.empty() ? "" : "; plot: ", o_.plot.c_str());
  }
  std::fflush(stdout);
  return 0;
}

int Cluster::Run() {
  absl::Status prepared = Prepare();
  if (!prepared.ok()) {
    std::fprintf(stderr, "leeway launch: %s\n", std::string(prepared.message()).c_str());
    return 2;
  }
  start_ = absl::Now();
  std::fprintf(stderr, "leeway launch: %d servers, %d workers, %s, %d clocks; run directory %s\n",
               o_.servers, o_.workers, RunName(o_).c_str(), o_.clocks, dir_.c_str());
  absl::Status status = StartAll();
  if (status.ok()) status = Supervise();
  if (!status.ok() || g_interrupted) {
    if (g_interrupted) {
      std::fprintf(stderr, "\nleeway launch: interrupted; stopping every process\n");
    } else {
      std::fprintf(stderr, "leeway launch: %s\nstopping the rest\n",
                   std::string(status.message()).c_str());
    }
    StopAll();
    return g_interrupted ? 130 : 1;
  }
  // Servers and the coordinator stop after the workers; the summary is
  // read first.
  for (auto& s : servers_) s->Stop(kStopGrace);
  coordinator_process_->Stop(kStopGrace);
  return Finish();
}

}  // namespace

int Launch(const LaunchOptions& options) {
  struct sigaction action = {};
  action.sa_handler = [](int) { g_interrupted = 1; };
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  Cluster cluster(options);
  return cluster.Run();
}

}  // namespace leeway
