// coordinator_bench: is the coordinator a bottleneck at a thousand GPUs?
// Starts leeway-coordinator as its own process, registers --workers
// simulated workers, and has them heartbeat and report stats once a second
// each (from this one process) for --seconds, while it times admin
// GetClusterStatus calls. Prints the coordinator's CPU use (from
// /proc/<pid>/stat, as a share of one core) and the admin latency p50/p99.
//
//   bazel run -c opt //bench:coordinator_bench -- --workers=1000 --seconds=10
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admin.grpc.pb.h"
#include "coordinator.grpc.pb.h"
#include "tests/subprocess.h"

ABSL_FLAG(int, workers, 1000, "simulated workers");
ABSL_FLAG(int, seconds, 10, "how long the load runs");
ABSL_FLAG(int, threads, 4, "client threads sending the load");

namespace leeway {
namespace {

double CpuSeconds(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(in, line);
  // Fields after the command name (which ends with ')'): utime is 14th, stime 15th.
  const std::vector<std::string> f = absl::StrSplit(line.substr(line.rfind(')') + 2), ' ');
  if (f.size() < 13) return 0;
  return (std::stod(f[11]) + std::stod(f[12])) / sysconf(_SC_CLK_TCK);
}

template <typename Fn>
grpc::Status Call(const std::string& token, Fn fn) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return fn(&context);
}

int Run() {
  const std::string dir = testing::MakeTempDir("coordinator_bench");
  const std::string token = "bench-token";
  std::ofstream(dir + "/token") << token << "\n";
  const int workers = absl::GetFlag(FLAGS_workers);
  auto process = testing::Subprocess::Start(
      {testing::RunfilePath("coordinator/leeway-coordinator"), "--listen=127.0.0.1:0",
       "--token_file=" + dir + "/token", absl::StrCat("--workers=", workers),
       "--metrics_port=-1", "--heartbeat_timeout_ms=30000", "--ready_file=" + dir + "/ready"},
      {}, dir + "/coordinator.log");
  if (!process.ok()) return 1;
  auto ready = testing::WaitForFile(dir + "/ready", absl::Now() + absl::Seconds(20));
  if (!ready.ok()) return 1;
  const std::string address =
      "127.0.0.1:" + std::vector<std::string>(absl::StrSplit(*ready, '\n'))[0];
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Coordinator::NewStub(channel);
  auto admin = v1::Admin::NewStub(channel);
  std::vector<v1::RegisterResponse> members(workers);
  for (auto& m : members) {
    v1::RegisterRequest r;
    r.set_role(v1::ROLE_WORKER);
    r.set_host("sim");
    if (!Call(token, [&](auto* c) { return stub->Register(c, r, &m); }).ok()) return 1;
  }
  std::atomic<bool> stop{false};
  std::atomic<long> calls{0}, failures{0};
  std::vector<std::thread> load;
  const int threads = absl::GetFlag(FLAGS_threads);
  for (int t = 0; t < threads; ++t) {
    load.emplace_back([&, t] {
      uint32_t clock = 0;
      while (!stop) {
        const absl::Time round = absl::Now();
        ++clock;
        for (int w = t; w < workers && !stop; w += threads) {
          v1::HeartbeatRequest hb;
          hb.set_role(v1::ROLE_WORKER);
          hb.set_rank(members[w].rank());
          hb.set_incarnation(members[w].incarnation());
          hb.set_clock(clock);
          v1::HeartbeatResponse reply;
          v1::StatsReport report;
          report.set_role(v1::ROLE_WORKER);
          report.set_rank(members[w].rank());
          report.mutable_worker()->set_clock(clock);
          report.mutable_worker()->set_bandwidth_bytes_per_sec(1e9);
          v1::ReportStatsResponse ignored;
          const bool ok =
              Call(token, [&](auto* c) { return stub->Heartbeat(c, hb, &reply); }).ok() &&
              Call(token, [&](auto* c) { return stub->ReportStats(c, report, &ignored); }).ok();
          calls += 2;
          if (!ok) ++failures;
        }
        absl::SleepFor(absl::Seconds(1) - (absl::Now() - round));
      }
    });
  }
  const int pid = (*process)->pid();
  const double cpu_start = CpuSeconds(pid);
  const absl::Time start = absl::Now();
  std::vector<double> latency_ms;
  while (absl::Now() - start < absl::Seconds(absl::GetFlag(FLAGS_seconds))) {
    const absl::Time t0 = absl::Now();
    v1::ClusterStatus status;
    if (Call(token, [&](auto* c) {
          return admin->GetClusterStatus(c, v1::ClusterStatusRequest(), &status);
        }).ok()) {
      latency_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const double wall = absl::ToDoubleSeconds(absl::Now() - start);
  const double cpu = CpuSeconds(pid) - cpu_start;
  stop = true;
  for (auto& t : load) t.join();
  (*process)->Signal(SIGTERM);
  (void)(*process)->Wait(absl::Now() + absl::Seconds(10));
  std::sort(latency_ms.begin(), latency_ms.end());
  auto pct = [&](double p) {
    return latency_ms.empty() ? 0.0 : latency_ms[std::min(latency_ms.size() - 1,
                                                          size_t(p * latency_ms.size()))];
  };
  std::printf("| workers | RPCs/s (heartbeat + stats) | failed | coordinator CPU (share of one core) | "
              "admin p50 ms | admin p99 ms | admin calls |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  std::printf("| %d | %.0f | %ld | %.3f | %.2f | %.2f | %zu |\n", workers, calls / wall,
              failures.load(), cpu / wall, pct(0.5), pct(0.99), latency_ms.size());
  return failures.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
