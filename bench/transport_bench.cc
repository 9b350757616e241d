// transport_bench: goodput and message rate of Leeway's UCX transport between
// two processes, against ucx_perftest measured in the same run on the same
// transports (shared/notes/ucx.md: absolute figures drift on shared
// machines; ratios are what we track).
//
//   bazel run -c opt //bench:transport_bench -- --tls=tcp,sm
//
// For each transport and size it measures, --repeats times, each run of
// ours paired with the baselines' runs right after it (ratios are the
// medians of the per-pair ratios, since this machine's speed drifts by 2x
// within a minute):
//   push   one-way PUSHes, --window in flight, received in place on the
//          server (BufferProvider); baselines `ucx_perftest -t ucp_am_bw`
//          and, on shared memory, bare UCP whose receiver lands each
//          payload too (ucx_landed.h: perftest's receiver never reads it).
//   rtrip  PUSH then PULL of the same size, one at a time (the parameter-
//          server step); baseline `ucx_perftest -t ucp_am_lat` (ping-pong).
// MB/s are 2^20 bytes per second, as ucx_perftest prints them. Every pair
// runs pinned, client side and server side on a CPU each (--cpus), so that
// placement is the same for ours and the baselines.
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "bench/perftest.h"
#include "bench/ucx_landed.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/transport/transport.h"
#include "tests/subprocess.h"

ABSL_FLAG(std::string, tls, "tcp,sm", "transports: tcp (listener) and/or sm "
          "(worker address, shared memory)");
ABSL_FLAG(std::string, sizes, "4096,65536,1048576,4194304,16777216",
          "message sizes in bytes");
ABSL_FLAG(int, repeats, 5, "runs per figure; the median is reported");
ABSL_FLAG(int, window, 16, "pushes in flight");
ABSL_FLAG(double, bytes_per_run, 256.0 * (1 << 20), "bytes per timed run");
ABSL_FLAG(std::string, role, "client",
          "internal: client, server or landed_server");
ABSL_FLAG(std::string, ready_file, "", "internal: server's ready file");
ABSL_FLAG(int, busy_poll_us, 50, "progress threads poll this long before "
          "sleeping");
ABSL_FLAG(bool, baseline, true, "also run ucx_perftest (off: for profiling)");
ABSL_FLAG(bool, round_trips, true, "also time round trips (off: pushes alone, for profiling)");
ABSL_FLAG(std::string, markdown, "", "also write the table here");
ABSL_FLAG(std::string, cpus, "auto",
          "CLIENT,SERVER: every client (ours, perftest's, the landed "
          "baseline's) runs on CPU CLIENT and every server on CPU SERVER; "
          "auto: the first two CPUs this process may use; none: where the "
          "scheduler puts them");
ABSL_FLAG(int, pin_cpu, -1, "internal: the server's CPU");

namespace leeway {
namespace {

constexpr uint32_t kMaxSize = 16u << 20;
// How long one timed run may take before it counts as failed.
constexpr absl::Duration kRunLimit = absl::Seconds(60);
volatile sig_atomic_t g_stop = 0;

TransportOptions Options(uint32_t rank) {
  TransportOptions options;
  options.job_id = 1;
  options.rank = rank;
  options.token = "bench";
  options.limits.max_payload_bytes = kMaxSize;
  options.busy_poll = absl::Microseconds(absl::GetFlag(FLAGS_busy_poll_us));
  return options;
}

int Serve() {
  auto transport = Transport::Create(Options(0));
  if (!transport.ok()) return 1;
  Transport* t = transport->get();
  // Pushes land in place; pulls are served from a lent buffer.
  static std::vector<uint8_t> sink(kMaxSize), parameters(kMaxSize, 0x3C);
  t->SetHandler(
      MessageKind::kPush, [](Message) {},
      [](const WireHeader&) -> absl::StatusOr<absl::Span<uint8_t>> {
        return absl::MakeSpan(sink);
      });
  t->SetHandler(MessageKind::kPull, [t](Message m) {
    WireHeader h;
    h.kind = MessageKind::kPullReply;
    const uint32_t size = std::min(m.header.element_count, kMaxSize);
    t->ReplyFrom(m, h, absl::MakeConstSpan(parameters).first(size));
  });
  auto port = t->Listen("127.0.0.1", 0);
  auto address = t->WorkerAddress();
  if (!port.ok() || !address.ok()) return 1;
  const std::string ready = absl::GetFlag(FLAGS_ready_file);
  {
    std::ofstream out(ready + ".tmp");
    out << *port << "\n" << absl::BytesToHexString(*address) << "\n";
  }
  std::rename((ready + ".tmp").c_str(), ready.c_str());
  signal(SIGTERM, [](int) { g_stop = 1; });
  while (!g_stop) pause();
  return 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Figures {
  double push_mbps = 0, push_rate = 0, rtrip_rate = 0;
};

// One timed run of `count` pushes of `size` bytes, `window` in flight; ends
// with a PULL so that the server has taken every push.
absl::StatusOr<double> TimePushes(Transport& t, PeerId peer, uint32_t size,
                                  int count, int window,
                                  const std::vector<uint8_t>& data) {
  // At most `window` in flight, like ucx_perftest's -O.
  std::deque<Ticket> in_flight;
  WireHeader h;
  h.kind = MessageKind::kPush;
  // One deadline for the run: reading the clock per message (absl::Now()
  // takes 75 ns on this VM) would time the harness, not the transport, and
  // perftest reads none.
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + kRunLimit;
  for (int i = 0; i < count; ++i) {
    if (in_flight.size() >= static_cast<size_t>(window)) {
      LEEWAY_RETURN_IF_ERROR(t.Wait(in_flight.front(), deadline));
      in_flight.pop_front();
    }
    in_flight.push_back(t.Send(peer, h, absl::MakeConstSpan(data).first(size)));
  }
  for (Ticket& ticket : in_flight) {
    LEEWAY_RETURN_IF_ERROR(t.Wait(ticket, deadline));
  }
  WireHeader fence;
  fence.kind = MessageKind::kPull;
  LEEWAY_RETURN_IF_ERROR(t.Call(peer, fence, {}, {}, deadline).Wait());
  return absl::ToDoubleSeconds(absl::Now() - start);
}

absl::StatusOr<double> TimeRoundTrips(Transport& t, PeerId peer, uint32_t size,
                                      int count,
                                      const std::vector<uint8_t>& data,
                                      std::vector<uint8_t>& reply) {
  WireHeader push;
  push.kind = MessageKind::kPush;
  WireHeader pull;
  pull.kind = MessageKind::kPull;
  pull.element_count = size;
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + kRunLimit;
  for (int i = 0; i < count; ++i) {
    Ticket pushed = t.Send(peer, push, absl::MakeConstSpan(data).first(size));
    Ticket pulled = t.Call(peer, pull, {}, absl::MakeSpan(reply).first(size), deadline);
    LEEWAY_RETURN_IF_ERROR(t.Wait(pushed));
    LEEWAY_RETURN_IF_ERROR(t.Wait(pulled));
  }
  return absl::ToDoubleSeconds(absl::Now() - start);
}

int Iterations(uint32_t size, double bytes, int lo, int hi) {
  return std::max(lo, std::min(hi, static_cast<int>(bytes / size)));
}

}  // namespace
}  // namespace leeway

namespace leeway {
namespace {

struct Row {
  std::string tls;
  uint32_t size;
  Figures ours;
  // Medians of the baselines; 0: not measured.
  double perftest_mbps = 0, perftest_latency_us = 0, raw_mbps = 0;
  double push_ratio = 0, trip_ratio = 0;
  double landed_mbps = 0, landed_ratio = 0;
};

// --cpus, parsed; both -1 for none (or auto on a single CPU).
absl::StatusOr<PerftestCpus> ParseCpus() {
  PerftestCpus cpus;
  const std::string text = absl::GetFlag(FLAGS_cpus);
  if (text == "none") return cpus;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
    return absl::InternalError("sched_getaffinity failed");
  }
  if (text == "auto") {
    std::vector<int> first;
    for (int cpu = 0; cpu < CPU_SETSIZE && first.size() < 2; ++cpu) {
      if (CPU_ISSET(cpu, &allowed)) first.push_back(cpu);
    }
    if (first.size() == 2) cpus = {first[0], first[1]};
    return cpus;
  }
  const std::vector<std::string> parts = absl::StrSplit(text, ',');
  const auto usable = [&](int cpu) {
    return cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed);
  };
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &cpus.client) ||
      !absl::SimpleAtoi(parts[1], &cpus.server) || !usable(cpus.client) ||
      !usable(cpus.server)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--cpus wants auto, none or CLIENT,SERVER (two CPUs this process may "
        "use); got '", text, "'"));
  }
  return cpus;
}

// ParseCpus() once, before the client pins itself (which narrows what
// "auto" would see).
absl::StatusOr<PerftestCpus> Cpus() {
  static const absl::StatusOr<PerftestCpus>* const cpus =
      new absl::StatusOr<PerftestCpus>(ParseCpus());
  return *cpus;
}

// Pins the calling thread, and the threads and processes it starts later,
// to `cpu` (-1: leaves it be).
absl::Status PinTo(int cpu) {
  if (cpu < 0) return absl::OkStatus();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(absl::StrCat("cannot pin to CPU ", cpu));
  }
  return absl::OkStatus();
}

std::map<std::string, std::string> Env(const std::string& tls) {
  return {{"UCX_TLS", tls}, {"UCX_NET_DEVICES", "lo"},
          {"UCX_WARN_UNUSED_ENV_VARS", "n"}};
}

std::string SelfPath() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  return self;
}

// A server child process of this binary in `role`; returns its ready file.
absl::StatusOr<std::string> StartServer(
    const std::string& role, const std::string& tls, const std::string& dir,
    std::unique_ptr<testing::Subprocess>* server) {
  const std::string ready = absl::StrCat(dir, "/", role, ".ready");
  std::remove(ready.c_str());  // an earlier server's
  LEEWAY_ASSIGN_OR_RETURN(PerftestCpus cpus, Cpus());
  LEEWAY_ASSIGN_OR_RETURN(
      *server, testing::Subprocess::Start(
                   {SelfPath(), "--role=" + role, "--ready_file=" + ready,
                    absl::StrCat("--pin_cpu=", cpus.server)},
                   Env(tls), absl::StrCat(dir, "/", role, ".log")));
  return testing::WaitForFile(ready, absl::Now() + absl::Seconds(20));
}

void StopServer(testing::Subprocess& server) {
  server.Signal(SIGTERM);
  server.Wait(absl::Now() + absl::Seconds(10)).IgnoreError();
}

// One timed run of the landed-payload UCP baseline (ucx_landed.h), in a
// server process of its own: its loop spins, so it lives only for the run.
absl::StatusOr<double> TimeLanded(uint32_t size, int count, int window,
                                  const std::string& tls,
                                  const std::string& dir) {
  std::unique_ptr<testing::Subprocess> server;
  LEEWAY_ASSIGN_OR_RETURN(std::string address,
                          StartServer("landed_server", tls, dir, &server));
  // The client's UCP context reads UCX_TLS when it is made.
  const char* ours = getenv("UCX_TLS");
  const std::string saved = ours == nullptr ? "" : ours;
  setenv("UCX_TLS", tls.c_str(), 1);
  auto client = LandedClient::Connect(
      std::string(absl::StripAsciiWhitespace(address)));
  setenv("UCX_TLS", saved.c_str(), 1);
  absl::StatusOr<double> seconds = absl::UnknownError("not run");
  if (!client.ok()) {
    seconds = client.status();
  } else {
    seconds = (*client)->TimePushes(size, std::max(1, count / 4), window);
    if (seconds.ok()) seconds = (*client)->TimePushes(size, count, window);
    client->reset();
  }
  StopServer(*server);
  return seconds;
}

absl::Status MeasureTransport(const std::string& name, std::vector<Row>* rows) {
  // Our transport leaves CMA out of "sm" (core/transport/ucx_tls.h); the fair
  // baselines run on the same transports, and perftest on raw "sm,self" is
  // shown beside them.
  const bool shm = name == "sm";
  const bool baseline = absl::GetFlag(FLAGS_baseline);
  const std::string ours_tls = shm ? "sm,self" : "tcp";
  const std::string baseline_tls = shm ? "sysv,posix,self" : "tcp";
  const std::string dir = testing::MakeTempDir("transport_bench");
  LEEWAY_ASSIGN_OR_RETURN(const PerftestCpus cpus, Cpus());
  for (const auto& kv : Env(ours_tls)) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::unique_ptr<testing::Subprocess> server;
  LEEWAY_ASSIGN_OR_RETURN(std::string ready_text,
                          StartServer("server", ours_tls, dir, &server));
  std::vector<std::string> lines = absl::StrSplit(ready_text, '\n');
  int port = 0;
  if (lines.size() < 2 || !absl::SimpleAtoi(lines[0], &port)) {
    return absl::InternalError("bad ready file");
  }
  LEEWAY_ASSIGN_OR_RETURN(auto transport, Transport::Create(Options(1)));
  LEEWAY_ASSIGN_OR_RETURN(
      PeerId peer, shm ? transport->ConnectToWorkerAddress(
                             absl::HexStringToBytes(lines[1]))
                       : transport->Connect("127.0.0.1", port));
  std::printf("# %s: endpoint uses %s\n", name.c_str(),
              transport->PeerTransportName(peer).value_or("?").c_str());
  std::vector<uint8_t> data(kMaxSize, 0xA5), reply(kMaxSize);
  const int window = absl::GetFlag(FLAGS_window);
  const double bytes = absl::GetFlag(FLAGS_bytes_per_run);
  for (absl::string_view size_text :
       absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    uint32_t size = 0;
    if (!absl::SimpleAtoi(size_text, &size) || size == 0 || size > kMaxSize) {
      return absl::InvalidArgumentError(absl::StrCat("bad size ", size_text));
    }
    Row row;
    row.tls = name;
    row.size = size;
    const int pushes = Iterations(size, bytes, 100, 20000);
    const int trips = Iterations(size, bytes / 8, 20, 5000);
    LEEWAY_RETURN_IF_ERROR(
        TimePushes(*transport, peer, size, pushes / 4, window, data).status());
    std::vector<double> push_s, trip_s, push_ratios, trip_ratios, landed_s,
        landed_ratios, bw, lat, raw;
    const double mib = static_cast<double>(size) / (1 << 20);
    for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
      LEEWAY_RETURN_IF_ERROR(
          TimePushes(*transport, peer, size, pushes / 4, window, data).status());
      LEEWAY_ASSIGN_OR_RETURN(double s, TimePushes(*transport, peer, size,
                                                   pushes, window, data));
      push_s.push_back(s);
      if (absl::GetFlag(FLAGS_round_trips)) {
        LEEWAY_ASSIGN_OR_RETURN(double t,
                                TimeRoundTrips(*transport, peer, size, trips, data, reply));
        trip_s.push_back(t);
      }
      if (!baseline) continue;
      LEEWAY_ASSIGN_OR_RETURN(PerftestResult p, RunPerftest("ucp_am_bw", size, pushes, window,
                                                            Env(baseline_tls), dir, cpus));
      bw.push_back(p.bandwidth_mbps);
      push_ratios.push_back(pushes * mib / s / p.bandwidth_mbps);
      if (!trip_s.empty()) {
        LEEWAY_ASSIGN_OR_RETURN(PerftestResult l, RunPerftest("ucp_am_lat", size, trips, 1,
                                                              Env(baseline_tls), dir, cpus));
        lat.push_back(l.latency_us);
        // am_lat reports one-way latency: a ping-pong takes twice that.
        trip_ratios.push_back(trips / trip_s.back() * 2 * l.latency_us * 1e-6);
      }
      if (shm) {
        LEEWAY_ASSIGN_OR_RETURN(
            double b, TimeLanded(size, pushes, window, baseline_tls, dir));
        landed_s.push_back(b);
        landed_ratios.push_back(b / s);
      }
      if (shm) {
        LEEWAY_ASSIGN_OR_RETURN(
            PerftestResult q, RunPerftest("ucp_am_bw", size, pushes, window,
                                          Env("sm,self"), dir, cpus));
        raw.push_back(q.bandwidth_mbps);
      }
    }
    row.ours.push_mbps = pushes * mib / Median(push_s);
    row.ours.push_rate = pushes / Median(push_s);
    row.ours.rtrip_rate = trip_s.empty() ? 0 : trips / Median(trip_s);
    row.perftest_mbps = Median(bw);
    row.perftest_latency_us = Median(lat);
    row.push_ratio = Median(push_ratios);
    row.trip_ratio = Median(trip_ratios);
    if (!landed_s.empty()) {
      row.landed_mbps = pushes * mib / Median(landed_s);
      row.landed_ratio = Median(landed_ratios);
    }
    row.raw_mbps = Median(raw);
    rows->push_back(row);
    std::fprintf(stderr, "measured %s %u\n", name.c_str(), size);
  }
  StopServer(*server);
  return absl::OkStatus();
}

std::string Table(const std::vector<Row>& rows) {
  std::string out =
      "| transport | size | push MB/s | push msg/s | perftest am_bw MB/s | "
      "push ratio | landed UCP MB/s | push / landed | round trips/s | "
      "perftest am_lat trips/s | round-trip ratio "
      "| perftest sm,self (with CMA) MB/s |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Row& r : rows) {
    const double lat_trips =
        r.perftest_latency_us > 0 ? 1e6 / (2 * r.perftest_latency_us) : 0;
    const bool landed = r.landed_mbps > 0;
    const bool trips = r.ours.rtrip_rate > 0;  // --round_trips=false: none
    const auto figure = [](bool shown, const char* format, double value) {
      return shown ? absl::StrFormat(format, value) : std::string("-");
    };
    absl::StrAppendFormat(
        &out,
        "| %s | %s | %.0f | %.0f | %.0f | %.2f | %s | %s | %s | %s | %s "
        "| %s |\n",
        r.tls,
        r.size >= (1u << 20) ? absl::StrCat(r.size >> 20, " MiB")
                             : absl::StrCat(r.size >> 10, " KiB"),
        r.ours.push_mbps, r.ours.push_rate, r.perftest_mbps, r.push_ratio,
        figure(landed, "%.0f", r.landed_mbps), figure(landed, "%.2f", r.landed_ratio),
        figure(trips, "%.0f", r.ours.rtrip_rate), figure(lat_trips > 0, "%.0f", lat_trips),
        figure(trips && lat_trips > 0, "%.2f", r.trip_ratio),
        figure(r.raw_mbps > 0, "%.0f", r.raw_mbps));
  }
  return out;
}

double LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  in >> load;
  return load;
}

int RunClient() {
  const double load = LoadAverage();
  std::printf("# load average before the run: %.2f%s\n", load,
              load > 0.5 ? " (WARNING: something else is running; figures "
                           "will be low)"
                         : "");
  const absl::StatusOr<PerftestCpus> cpus = Cpus();
  absl::Status pinned = cpus.ok() ? PinTo(cpus->client) : cpus.status();
  if (!pinned.ok()) {
    std::fprintf(stderr, "transport_bench: %s\n", pinned.ToString().c_str());
    return 2;
  }
  if (cpus->client >= 0) {
    std::printf("# clients on CPU %d, servers on CPU %d\n", cpus->client,
                cpus->server);
  }
  std::vector<Row> rows;
  for (absl::string_view tls : absl::StrSplit(absl::GetFlag(FLAGS_tls), ',')) {
    const absl::Status status = MeasureTransport(std::string(tls), &rows);
    if (!status.ok()) {
      std::fprintf(stderr, "transport_bench %s: %s\n", std::string(tls).c_str(),
                   status.ToString().c_str());
      return 1;
    }
  }
  const std::string table = Table(rows);
  std::printf("%s", table.c_str());
  const std::string markdown = absl::GetFlag(FLAGS_markdown);
  if (!markdown.empty()) std::ofstream(markdown) << table;
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, which leaves Mutex deadlock
  // detection on: a graph update on every lock. Tests keep it; runs do not.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  leeway::SetMinLogLevel(leeway::LogLevel::kWarning);
  if (absl::GetFlag(FLAGS_role) != "client" &&
      !leeway::PinTo(absl::GetFlag(FLAGS_pin_cpu)).ok()) {
    return 2;
  }
  if (absl::GetFlag(FLAGS_role) == "server") return leeway::Serve();
  if (absl::GetFlag(FLAGS_role) == "landed_server") {
    return leeway::RunLandedServer(absl::GetFlag(FLAGS_ready_file),
                                   leeway::kMaxSize);
  }
  return leeway::RunClient();
}
