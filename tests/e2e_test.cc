// End to end: the MNIST MLP trained by real processes on loopback - the
// coordinator, two servers and four leeway-worker processes - started by
// `leeway launch` or by the test itself, then checked from the outside:
// accuracy, a worker killed mid-training, Ctrl-C on the launcher.
// Needs the MNIST IDX files: LEEWAY_MNIST_DIR (deploy/test.sh makes them
// with deploy/fetch-mnist.sh and passes the directory).
#include <signal.h>
#include <sys/types.h>

#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.pb.h"
#include "catch2/catch.hpp"
#include "cli/launch_report.h"
#include "core/common/file_text.h"
#include "kernels/gpu.h"
#include "tests/stop_fifo.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::LoopbackUcxEnvironment;
using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;
using testing::WaitForFile;

std::string MnistDir() {
  const char* dir = std::getenv("LEEWAY_MNIST_DIR");
  INFO("set LEEWAY_MNIST_DIR to the output of deploy/fetch-mnist.sh "
       "(deploy/test.sh does: --test_env=LEEWAY_MNIST_DIR=...)");
  REQUIRE(dir != nullptr);
  REQUIRE(std::ifstream(std::string(dir) + "/train-images-idx3-ubyte").good());
  return dir;
}

// `leeway launch` on MNIST with `flags`: its run directory is `dir`/run,
// its output `dir`/launch.out.
absl::StatusOr<std::unique_ptr<Subprocess>> StartLaunch(const std::string& dir,
                                                        const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {RunfilePath("cli/leeway"), "launch",
                                   "--data-dir=" + MnistDir(), "--run-dir=" + dir + "/run",
                                   "--bin-dir=" + RunfilePath("cli")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return Subprocess::Start(argv, LoopbackUcxEnvironment(), dir + "/launch.out");
}

// The summary object of `leeway launch -o json`: the last line of its
// output that starts with '{' (into *json too).
absl::StatusOr<LaunchSummary> SummaryIn(const std::string& out, std::string* json) {
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipWhitespace());
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind("{", 0) != 0) continue;
    *json = *it;
    return ParseSummary(*it);
  }
  return absl::InternalError(absl::StrCat("no JSON summary in:\n", out));
}

// Waits (at most a minute) until the file at `path` holds `text`.
bool AwaitText(const std::string& path, const std::string& text) {
  const absl::Time until = absl::Now() + absl::Seconds(60);
  while (ReadFileOrEmpty(path).find(text) == std::string::npos) {
    if (absl::Now() >= until) return false;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return true;
}

// `leeway launch -o json` with `flags`; returns its summary.
absl::StatusOr<LaunchSummary> LaunchAndSummarize(const std::vector<std::string>& flags,
                                                std::string* summary_json) {
  const std::string dir = MakeTempDir("launch");
  std::vector<std::string> with_json = {"-o", "json"};
  with_json.insert(with_json.end(), flags.begin(), flags.end());
  auto launch = StartLaunch(dir, with_json);
  if (!launch.ok()) return launch.status();
  absl::StatusOr<int> code = (*launch)->Wait(absl::Now() + absl::Minutes(5));
  const std::string out = (*launch)->Output();
  if (!code.ok() || *code != 0) {
    return absl::InternalError(absl::StrCat("leeway launch failed:\n", out));
  }
  absl::StatusOr<LaunchSummary> summary = SummaryIn(out, summary_json);
  if (summary.ok()) {
    std::printf("leeway launch %s: %s\n", absl::StrJoin(flags, " ").c_str(),
                summary_json->c_str());
  }
  return summary;
}

TEST_CASE("BSP, SSP with top-k and ASP with adaptive compression all learn MNIST") {
  std::string json;
  auto bsp = LaunchAndSummarize({"--staleness=0", "--compression=none"}, &json);
  INFO(bsp.status().ToString());
  REQUIRE(bsp.ok());
  INFO("BSP uncompressed: " << json);
  CHECK(bsp->test_accuracy >= 0.95);
  CHECK(bsp->compression_ratio == Approx(1.0).epsilon(0.01));
  for (const auto& flags : std::vector<std::vector<std::string>>{
           {"--staleness=3", "--compression=fixed:topk:0.01"},
           {"--staleness=async", "--compression=adaptive"}}) {
    auto run = LaunchAndSummarize(flags, &json);
    INFO(flags[0] << " " << flags[1] << ": " << run.status().ToString() << " " << json);
    REQUIRE(run.ok());
    CHECK(run->test_accuracy >= 0.95);
    CHECK(run->test_accuracy >= bsp->test_accuracy - 0.01);
    CHECK(run->compression_ratio > 2.0);
    CHECK(run->bytes_per_iter < bsp->bytes_per_iter);
  }
}

TEST_CASE("a --profile run pushes ResNet-50's tensors through the cluster") {
  std::string json;
  const std::vector<std::string> flags = {"--profile=resnet50",
                                          "--clocks=6",
                                          "--gpu-ms=50",
                                          "--staleness=1",
                                          "--compression=fixed:topk:0.01",
                                          "--straggler=1.5",
                                          "--jitter=0.3"};
  auto run = LaunchAndSummarize(flags, &json);
  INFO(run.status().ToString() << " " << json);
  REQUIRE(run.ok());
  CHECK(run->test_accuracy < 0);  // no model to evaluate
  CHECK(run->clocks == 6);
  CHECK(run->compression_ratio > 20);  // the plan applies from clock 0
  // Pushes of ~1% of 25.6M parameters, pulls of what changed.
  CHECK(run->bytes_per_iter > 1e6);
  CHECK(run->samples_per_sec > 0);
  // The same without batched pushes and pulls: each of the ~170 chunks a
  // worker pushes and pulls costs a message and its reply again.
  std::vector<std::string> unbatched_flags = flags;
  unbatched_flags.push_back("--push-batch-kib=0");
  unbatched_flags.push_back("--pull-batch-kib=0");
  std::string unbatched_json;
  auto unbatched = LaunchAndSummarize(unbatched_flags, &unbatched_json);
  INFO(unbatched.status().ToString() << " " << unbatched_json);
  REQUIRE(unbatched.ok());
  CHECK(run->messages_per_iter > 0);
  CHECK(run->messages_per_iter < unbatched->messages_per_iter / 2);
}

TEST_CASE("runs with gradients in GPU memory compress on the device and learn MNIST") {
  const std::vector<std::string> flags = {"--profile=resnet50", "--clocks=6", "--gpu-ms=50",
                                          "--staleness=1", "--compression=fixed:topk:0.01",
                                          "--gradients=device"};
  if (UsableGpus() == 0) {
    WARN("no usable GPU: checking that device gradients are refused by name");
    const std::string dir = MakeTempDir("device");
    auto launch = StartLaunch(dir, flags);
    REQUIRE(launch.ok());
    absl::StatusOr<int> code = (*launch)->Wait(absl::Now() + absl::Minutes(2));
    const std::string out = (*launch)->Output();
    INFO(out);
    REQUIRE(code.ok());
    CHECK(*code != 0);
    CHECK(out.find("worker 0") != std::string::npos);
    CHECK(out.find("--gradients=device needs a CUDA build and a usable GPU") !=
          std::string::npos);
    return;
  }
  std::string json;
  auto run = LaunchAndSummarize(flags, &json);
  INFO(run.status().ToString() << " " << json);
  REQUIRE(run.ok());
  CHECK(run->clocks == 6);
  CHECK(run->compression_ratio > 20);
  CHECK(run->bytes_per_iter > 1e6);
  CHECK(run->samples_per_sec > 0);
  // The MLP on cuBLAS learns MNIST as it does on the CPU.
  auto mnist =
      LaunchAndSummarize({"--staleness=2", "--compression=adaptive", "--gradients=device"}, &json);
  INFO(mnist.status().ToString() << " " << json);
  REQUIRE(mnist.ok());
  CHECK(mnist->test_accuracy >= 0.95);
}

// The pids of `parent`'s children.
std::vector<pid_t> ChildrenOf(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> f = absl::StrSplit(stat.substr(close + 2), ' ');
    pid_t ppid = 0;
    if (f.size() > 1 && absl::SimpleAtoi(f[1], &ppid) && ppid == parent) children.push_back(pid);
  }
  closedir(proc);
  return children;
}

bool Alive(pid_t pid) {
  const std::string stat = ReadFileOrEmpty(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close = stat.rfind(')');
  return close != std::string::npos && stat.substr(close + 2, 1) != "Z";
}

TEST_CASE("Ctrl-C on leeway launch stops every child") {
  const std::string dir = MakeTempDir("interrupt");
  auto launch = StartLaunch(dir, {"--clocks=1000000", "--hidden=32"});
  REQUIRE(launch.ok());
  // Wait until the workers train.
  AwaitText(dir + "/run/worker3.log", "clock");
  const std::vector<pid_t> children = ChildrenOf((*launch)->pid());
  INFO((*launch)->Output());
  REQUIRE(children.size() == 7);  // coordinator, 2 servers, 4 workers
  (*launch)->Signal(SIGINT);
  absl::StatusOr<int> code = (*launch)->Wait(absl::Now() + absl::Seconds(60));
  REQUIRE(code.ok());
  CHECK(*code == 130);
  for (pid_t child : children) {
    INFO("child " << child);
    CHECK_FALSE(Alive(child));
  }
  CHECK((*launch)->Output().find("interrupted") != std::string::npos);
}

// `leeway launch` on MNIST (300 clocks) in `dir`, where at clock 20 a peer
// stops the FIFO of the process whose ready file is run/`ready_name`; checks
// that the job still ends well and returns launch's output.
std::string TrainWithFifoStopped(const std::string& dir, const std::string& ready_name) {
  auto launch = StartLaunch(dir, {"-o", "json", "--clocks=300", "--hidden=32"});
  REQUIRE(launch.ok());
  INFO((*launch)->Output());
  REQUIRE(AwaitText(dir + "/run/worker3.log", "clock 20 "));
  const absl::Status stopped =
      testing::StopFifoOf(dir + "/run/" + ready_name, LoopbackUcxEnvironment(), dir + "/wedge.log");
  INFO(stopped);
  REQUIRE(stopped.ok());
  absl::StatusOr<int> code = (*launch)->Wait(absl::Now() + absl::Minutes(5));
  const std::string out = (*launch)->Output();
  INFO(out);
  REQUIRE(code.ok());
  CHECK(*code == 0);
  std::string json;
  absl::StatusOr<LaunchSummary> summary = SummaryIn(out, &json);
  REQUIRE(summary.ok());
  CHECK(summary->test_accuracy >= 0.85);
  return out;
}

TEST_CASE("a server whose shared-memory FIFO a dying peer stopped is restarted by leeway launch") {
  const std::string dir = MakeTempDir("stall");
  const std::string out = TrainWithFifoStopped(dir, "server0.ready");
  INFO(out << "\nserver 0:\n" << ReadFileOrEmpty(dir + "/run/server0.log"));
  CHECK(out.find("server 0 stopped: its data plane stalled") != std::string::npos);
  CHECK(ReadFileOrEmpty(dir + "/run/server0.log").find("exiting with 75") != std::string::npos);
  for (int i = 0; i < 4; ++i) {
    const std::string log = ReadFileOrEmpty(absl::StrCat(dir, "/run/worker", i, ".log"));
    INFO("worker " << i << ":\n" << log);
    CHECK(log.find("server 0 is back") != std::string::npos);
  }
}

TEST_CASE("a worker whose shared-memory FIFO a dying peer stopped replaces its data plane") {
  const std::string dir = MakeTempDir("worker_stall");
  const std::string out = TrainWithFifoStopped(dir, "worker1.ready");
  const std::string log = ReadFileOrEmpty(dir + "/run/worker1.log");
  INFO(out << "\nworker 1:\n" << log);
  CHECK(log.find("replaced the data plane") != std::string::npos);
  // Both servers are co-located: both went silent, and both came back
  // (the same processes) through the new transport; nobody restarted.
  CHECK(log.find("server 0 is back") != std::string::npos);
  CHECK(log.find("server 1 is back") != std::string::npos);
  CHECK(out.find("its data plane stalled") == std::string::npos);
}

struct ClusterOptions {
  std::string policy = "none";
  std::vector<std::string> server_flags;
  std::vector<std::string> worker_flags;
};

// A coordinator, two servers and four leeway-worker processes, started by
// the test (so that it can kill and restart them). "{shard}" in a server
// flag becomes the server's shard.
struct Cluster {
  std::string dir;
  std::string coordinator;
  std::unique_ptr<Subprocess> coordinator_process;
  std::vector<std::vector<std::string>> server_argv;
  std::vector<std::unique_ptr<Subprocess>> servers, workers;

  absl::Status StartServer(int i) {
    auto server = Subprocess::Start(server_argv[i], LoopbackUcxEnvironment(),
                                    absl::StrCat(dir, "/server", i, ".log"));
    if (!server.ok()) return server.status();
    servers[i] = *std::move(server);
    return absl::OkStatus();
  }
};

void StartCluster(const std::string& name, const ClusterOptions& o, Cluster* c) {
  c->dir = MakeTempDir(name);
  std::ofstream(c->dir + "/token") << "e2e-token\n";
  const auto env = LoopbackUcxEnvironment();
  const std::string token = "--token_file=" + c->dir + "/token";
  auto coordinator = Subprocess::Start(
      {RunfilePath("coordinator/leeway-coordinator"), "--listen=127.0.0.1:0", token,
       "--workers=4", "--servers=2", "--staleness=2", "--policy=" + o.policy,
       "--heartbeat_interval_ms=200", "--heartbeat_timeout_ms=2000", "--metrics_port=-1",
       "--ready_file=" + c->dir + "/coordinator.ready"},
      env, c->dir + "/coordinator.log");
  REQUIRE(coordinator.ok());
  c->coordinator_process = *std::move(coordinator);
  auto ready = WaitForFile(c->dir + "/coordinator.ready", absl::Now() + absl::Seconds(30));
  REQUIRE(ready.ok());
  c->coordinator = "127.0.0.1:" + std::vector<std::string>(absl::StrSplit(*ready, '\n'))[0];
  c->servers.resize(2);
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> argv = {
        RunfilePath("server/leeway-server"), "--listen=127.0.0.1:0", token,
        "--coordinator=" + c->coordinator, absl::StrCat("--shard=", i), "--threads=1",
        "--metrics_port=-1", "--advertise_host=127.0.0.1"};
    argv.insert(argv.end(), o.server_flags.begin(), o.server_flags.end());
    for (std::string& flag : argv) flag = absl::StrReplaceAll(flag, {{"{shard}", absl::StrCat(i)}});
    c->server_argv.push_back(argv);
    REQUIRE(c->StartServer(i).ok());
  }
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> argv = {RunfilePath("worker/leeway-worker"),
                                     "--coordinator=" + c->coordinator, token,
                                     absl::StrCat("--rank=", i), "--data_dir=" + MnistDir()};
    argv.insert(argv.end(), o.worker_flags.begin(), o.worker_flags.end());
    auto worker = Subprocess::Start(argv, env, absl::StrCat(c->dir, "/worker", i, ".log"));
    REQUIRE(worker.ok());
    c->workers.push_back(*std::move(worker));
  }
}

// Waits until worker `rank` logs clock `clock`.
void AwaitClock(Cluster& c, int rank, int clock) {
  const std::string line = absl::StrCat("clock ", clock, " ");
  const absl::Time until = absl::Now() + absl::Seconds(120);
  while (c.workers[rank]->Output().find(line) == std::string::npos && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  INFO(c.workers[rank]->Output());
  REQUIRE(c.workers[rank]->Output().find(line) != std::string::npos);
}

// Waits for worker `rank` to exit 0 and returns its result.
WorkerResult AwaitResult(Cluster& c, int rank) {
  absl::StatusOr<int> code = c.workers[rank]->Wait(absl::Now() + absl::Seconds(180));
  const std::string out = c.workers[rank]->Output();
  INFO("worker " << rank << ":\n" << out);
  REQUIRE(code.ok());
  REQUIRE(*code == 0);
  const size_t at = out.find("RESULT ");
  REQUIRE(at != std::string::npos);
  absl::StatusOr<WorkerResult> result =
      ParseWorkerResult(out.substr(at + 7, out.find('\n', at) - at - 7));
  REQUIRE(result.ok());
  return *result;
}

TEST_CASE("a server killed mid-training and restarted from its checkpoint: the job finishes") {
  Cluster c;
  ClusterOptions o;
  o.policy = "adaptive";
  const std::string checkpoints = MakeTempDir("checkpoints");
  o.server_flags = {"--checkpoint_dir=" + checkpoints + "/shard{shard}",
                    "--checkpoint_interval=0.5"};
  o.worker_flags = {"--hidden=256", "--clocks=1000", "--learning_rate=0.1", "--log_every=20",
                    "--server_wait=60"};
  StartCluster("server_restart", o, &c);
  AwaitClock(c, 0, 200);
  c.servers[1]->Signal(SIGKILL);
  REQUIRE(c.servers[1]->Wait(absl::Now() + absl::Seconds(10)).value_or(0) == 128 + SIGKILL);
  absl::SleepFor(absl::Milliseconds(500));
  REQUIRE(c.StartServer(1).ok());
  std::vector<WorkerResult> results;
  for (int i = 0; i < 4; ++i) results.push_back(AwaitResult(c, i));
  for (int i = 0; i < 4; ++i) {
    INFO("worker " << i << ":\n" << c.workers[i]->Output());
    CHECK(c.workers[i]->Output().find("server 1 is back") != std::string::npos);
  }
  const std::string restarted = c.servers[1]->Output();
  INFO(restarted);
  CHECK(restarted.find("restored") != std::string::npos);
  CHECK(results[0].test_accuracy >= 0.94);
}

TEST_CASE("a worker killed mid-training: the others finish and it shows as dead") {
  Cluster c;
  ClusterOptions o;
  o.worker_flags = {"--hidden=32", "--clocks=400", "--log_every=20"};
  StartCluster("dead_worker", o, &c);
  // Kill worker 3 once it is well into training.
  AwaitClock(c, 3, 100);
  c.workers[3]->Signal(SIGKILL);
  for (int i = 0; i < 3; ++i) AwaitResult(c, i);
  auto staleness = Subprocess::Start(
      {RunfilePath("cli/leeway"), "--coordinator=" + c.coordinator,
       "--token-file=" + c.dir + "/token", "-o", "json", "staleness"},
      {}, c.dir + "/staleness.json");
  REQUIRE(staleness.ok());
  REQUIRE((*staleness)->Wait(absl::Now() + absl::Seconds(30)).value_or(-1) == 0);
  v1::StalenessReport report;
  REQUIRE(google::protobuf::util::JsonStringToMessage((*staleness)->Output(), &report).ok());
  bool dead = false;
  for (const v1::WorkerStaleness& w : report.workers()) {
    if (w.rank() == 3) dead = w.health() == v1::HEALTH_DEAD;
    if (w.rank() != 3) CHECK(w.health() == v1::HEALTH_ALIVE);
  }
  CHECK(dead);
}

}  // namespace
}  // namespace leeway
