// transport_peer: a small program on the real transport for cross-process
// tests and benchmarks.
//
//   transport_peer serve  --ready_file=F [--listen=127.0.0.1:0]
//       Echo server: PULL is answered with its own payload; PUSH payloads are
//       checked against the CRC-32C in header.version and counted per peer;
//       a PULL of layer kReportLayer answers with that peer's counts. Writes
//       "port\nworker-address-hex\n" to F once ready. On SIGTERM prints a
//       "STATS ..." line and exits 0.
//   transport_peer client --server_file=F --via=sockaddr|address
//                         [--messages=10000] [--seed=1] [--window=16]
//       Sends mixed-size PUSHes and PULLs with checksums, checks every echo
//       and the server's final counts; exits 0 and prints "CLIENT ok ..." when
//       everything matched. --messages=0 runs until killed.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <deque>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "core/common/crc32c.h"
#include "core/common/logging.h"
#include "core/common/little_endian.h"
#include "core/transport/transport.h"
#include "tests/ready_file.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:0", "serve: address to listen on");
ABSL_FLAG(std::string, ready_file, "", "serve: where to write port+address");
ABSL_FLAG(std::string, server_file, "", "client: the server's ready file");
ABSL_FLAG(std::string, via, "sockaddr", "client: sockaddr or address");
ABSL_FLAG(int, messages, 10000, "client: messages to send (0: forever)");
ABSL_FLAG(int, seed, 1, "client: seed of the size/content generator");
ABSL_FLAG(int, window, 16, "client: operations in flight");
ABSL_FLAG(std::string, token, "test-token", "cluster token");
ABSL_FLAG(uint64_t, job, 42, "job id");

namespace leeway {
namespace {

constexpr uint32_t kReportLayer = 0xFFFFFFFFu;
volatile sig_atomic_t g_stop = 0;

TransportOptions MakeOptions(uint32_t rank) {
  TransportOptions options;
  options.job_id = absl::GetFlag(FLAGS_job);
  options.rank = rank;
  options.token = absl::GetFlag(FLAGS_token);
  options.limits.max_payload_bytes = 32u << 20;
  return options;
}

int Serve() {
  auto transport = Transport::Create(MakeOptions(0));
  if (!transport.ok()) {
    LEEWAY_LOG(ERROR) << transport.status();
    return 1;
  }
  Transport* t = transport->get();
  struct Counts {
    uint64_t ok = 0, bad = 0;
  };
  // Handlers run on the progress thread only: no lock needed.
  auto counts = std::make_shared<absl::flat_hash_map<PeerId, Counts>>();
  t->SetHandler(MessageKind::kPush, [counts](Message m) {
    const uint32_t crc = Crc32c(m.payload.data(), m.payload.size());
    Counts& c = (*counts)[m.peer];
    (crc == m.header.version ? c.ok : c.bad) += 1;
  });
  t->SetHandler(MessageKind::kPull, [t, counts](Message m) {
    WireHeader reply;
    reply.kind = MessageKind::kPullReply;
    reply.layer = m.header.layer;
    if (m.header.layer == kReportLayer) {
      uint8_t report[16];
      StoreLE64(report, (*counts)[m.peer].ok);
      StoreLE64(report + 8, (*counts)[m.peer].bad);
      t->Reply(m, reply, report);
      return;
    }
    reply.version = Crc32c(m.payload.data(), m.payload.size());
    t->Reply(m, reply, m.payload);
  });
  const std::vector<std::string> listen =
      absl::StrSplit(absl::GetFlag(FLAGS_listen), ':');
  int port_flag = 0;
  if (listen.size() != 2 || !absl::SimpleAtoi(listen[1], &port_flag)) {
    LEEWAY_LOG(ERROR) << "--listen wants host:port";
    return 2;
  }
  auto port = t->Listen(listen[0], static_cast<uint16_t>(port_flag));
  auto address = t->WorkerAddress();
  if (!port.ok() || !address.ok()) {
    LEEWAY_LOG(ERROR) << port.status() << " " << address.status();
    return 1;
  }
  const std::string ready = absl::GetFlag(FLAGS_ready_file);
  {
    std::ofstream out(ready + ".tmp");
    out << *port << "\n" << absl::BytesToHexString(*address) << "\n";
  }
  std::rename((ready + ".tmp").c_str(), ready.c_str());
  signal(SIGTERM, [](int) { g_stop = 1; });
  signal(SIGINT, [](int) { g_stop = 1; });
  while (!g_stop) pause();
  const TransportStats s = t->stats();
  std::printf(
      "STATS received=%llu bad=%llu unauthenticated=%llu "
      "handshake_failures=%llu peers_lost=%llu stalls=%llu\n",
      static_cast<unsigned long long>(s.messages_received),
      static_cast<unsigned long long>(s.bad_messages),
      static_cast<unsigned long long>(s.unauthenticated_messages),
      static_cast<unsigned long long>(s.handshake_failures),
      static_cast<unsigned long long>(s.peers_lost),
      static_cast<unsigned long long>(s.stalls));
  std::fflush(stdout);
  return 0;
}

struct InFlight {
  Ticket ticket;
  std::vector<uint8_t> payload;
  std::vector<uint8_t> reply;
  bool is_call = false;
};

size_t PickSize(std::mt19937_64& rng) {
  const int bucket = static_cast<int>(rng() % 100);
  if (bucket < 60) return rng() % 4097;                       // small, eager
  if (bucket < 97) return 4096 + rng() % (256 << 10);         // medium
  return (1 << 20) + rng() % (3 << 20);                       // large, rndv
}

// Waits the caller-driven way (Transport::Wait), as a busy worker would.
absl::Status CheckDone(Transport* t, InFlight& op) {
  const absl::Status status =
      t->Wait(op.ticket, absl::Now() + absl::Seconds(30));
  if (!status.ok()) return status;
  if (!op.is_call) return absl::OkStatus();
  const Message& reply = op.ticket.reply();
  if (reply.payload.size() != op.payload.size() ||
      reply.header.version != Crc32c(op.payload.data(), op.payload.size()) ||
      !std::equal(op.payload.begin(), op.payload.end(),
                  reply.payload.begin())) {
    return absl::DataLossError("echo does not match what was sent");
  }
  return absl::OkStatus();
}

absl::StatusOr<PeerId> ConnectToServer(Transport* t) {
  return ConnectFromReadyFile(t, absl::GetFlag(FLAGS_server_file),
                              absl::GetFlag(FLAGS_via));
}

int Client() {
  auto transport = Transport::Create(MakeOptions(1));
  if (!transport.ok()) {
    LEEWAY_LOG(ERROR) << transport.status();
    return 1;
  }
  Transport* t = transport->get();
  auto peer = ConnectToServer(t);
  if (!peer.ok()) {
    std::printf("CLIENT connect failed: %s\n", peer.status().ToString().c_str());
    return 1;
  }
  LEEWAY_LOG(INFO) << "connected, transport "
                   << t->PeerTransportName(*peer).value_or("?");
  std::mt19937_64 rng(absl::GetFlag(FLAGS_seed));
  const int messages = absl::GetFlag(FLAGS_messages);
  const size_t window = static_cast<size_t>(absl::GetFlag(FLAGS_window));
  std::deque<InFlight> in_flight;
  uint64_t pushes = 0, bytes = 0;
  for (int i = 0; messages == 0 || i < messages; ++i) {
    if (in_flight.size() >= window) {
      const absl::Status status = CheckDone(t, in_flight.front());
      if (!status.ok()) {
        std::printf("CLIENT failed at message %d: %s\n", i,
                    status.ToString().c_str());
        return 1;
      }
      in_flight.pop_front();
    }
    InFlight op;
    op.payload.resize(PickSize(rng));
    for (auto& b : op.payload) b = static_cast<uint8_t>(rng());
    bytes += op.payload.size();
    WireHeader h;
    h.version = Crc32c(op.payload.data(), op.payload.size());
    h.layer = static_cast<uint32_t>(i);
    op.is_call = (rng() % 2) == 0;
    if (op.is_call) {
      h.kind = MessageKind::kPull;
      op.reply.resize(op.payload.size());
      op.ticket = t->Call(*peer, h, op.payload, absl::MakeSpan(op.reply),
                          absl::Now() + absl::Seconds(30));
    } else {
      h.kind = MessageKind::kPush;
      ++pushes;
      op.ticket = t->Send(*peer, h, op.payload);
    }
    in_flight.push_back(std::move(op));
  }
  for (auto& op : in_flight) {
    const absl::Status status = CheckDone(t, op);
    if (!status.ok()) {
      std::printf("CLIENT failed draining: %s\n", status.ToString().c_str());
      return 1;
    }
  }
  WireHeader report;
  report.kind = MessageKind::kPull;
  report.layer = kReportLayer;
  Ticket counts =
      t->Call(*peer, report, {}, {}, absl::Now() + absl::Seconds(30));
  if (!counts.Wait(absl::Now() + absl::Seconds(30)).ok() || counts.reply().payload.size() != 16) {
    std::printf("CLIENT report failed: %s\n", counts.status().ToString().c_str());
    return 1;
  }
  const uint64_t ok = LoadLE64(counts.reply().payload.data());
  const uint64_t bad = LoadLE64(counts.reply().payload.data() + 8);
  if (ok != pushes || bad != 0) {
    std::printf("CLIENT server counted %llu good and %llu bad of %llu pushes\n",
                static_cast<unsigned long long>(ok),
                static_cast<unsigned long long>(bad),
                static_cast<unsigned long long>(pushes));
    return 1;
  }
  std::printf("CLIENT ok messages=%d pushes=%llu bytes=%llu\n", messages,
              static_cast<unsigned long long>(pushes),
              static_cast<unsigned long long>(bytes));
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  // Debian builds Abseil without NDEBUG, which leaves Mutex deadlock
  // detection on: a graph update on every lock. Tests keep it; runs do not.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: transport_peer serve|client [flags]\n");
    return 2;
  }
  const std::string mode = args[1];
  if (mode == "serve") return leeway::Serve();
  if (mode == "client") return leeway::Client();
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
