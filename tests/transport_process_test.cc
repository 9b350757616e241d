// Cross-process transport tests: real processes on 127.0.0.1, under
// UCX_TLS=tcp (listener endpoints) and UCX_TLS=sm,self (worker-address
// endpoints, shared memory).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "core/transport/transport.h"
#include "tests/stop_fifo.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

using testing::MakeTempDir;
using testing::RunfilePath;
using testing::Subprocess;
using testing::WaitForFile;

struct Setting {
  const char* name;
  const char* ucx_tls;
  const char* via;  // how clients connect
};
const Setting kTcp{"tcp", "tcp", "sockaddr"};
const Setting kShm{"shared memory", "sm,self", "address"};

std::map<std::string, std::string> Env(const Setting& s) {
  std::map<std::string, std::string> env = testing::LoopbackUcxEnvironment();
  env["UCX_TLS"] = s.ucx_tls;
  return env;
}

std::string Peer() { return RunfilePath("tests/transport_peer"); }

struct Server {
  std::unique_ptr<Subprocess> process;
  std::string ready_file;
  uint16_t port = 0;
  std::string address;
};

Server StartServer(const Setting& s, const std::string& dir) {
  Server server;
  server.ready_file = dir + "/server.ready";
  auto process = Subprocess::Start(
      {Peer(), "serve", "--ready_file=" + server.ready_file}, Env(s),
      dir + "/server.log");
  REQUIRE(process.ok());
  server.process = std::move(*process);
  auto ready = WaitForFile(server.ready_file, absl::Now() + absl::Seconds(20));
  REQUIRE(ready.ok());
  std::vector<std::string> lines = absl::StrSplit(*ready, '\n');
  REQUIRE(lines.size() >= 2);
  int port = 0;
  REQUIRE(absl::SimpleAtoi(lines[0], &port));
  server.port = static_cast<uint16_t>(port);
  server.address = absl::HexStringToBytes(lines[1]);
  return server;
}

std::string StopAndCollectStats(Server& server) {
  absl::StatusOr<std::string> stats = testing::TerminateAndFindLine(
      *server.process, "STATS ", absl::Seconds(20));
  REQUIRE(stats.ok());
  return *stats;
}

// The in-test transport uses the same UCX settings as the children.
std::unique_ptr<Transport> LocalTransport(const Setting& s, uint32_t rank,
                                          std::string token = "test-token") {
  for (const auto& kv : Env(s)) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  TransportOptions options;
  options.job_id = 42;
  options.rank = rank;
  options.token = std::move(token);
  options.limits.max_payload_bytes = 32u << 20;
  options.peer_timeout = absl::Seconds(3);
  options.handshake_timeout = absl::Seconds(3);
  auto t = Transport::Create(options);
  REQUIRE(t.ok());
  return std::move(*t);
}

absl::StatusOr<PeerId> ConnectLocal(Transport& t, const Setting& s,
                                    const Server& server) {
  if (std::string(s.via) == "address") {
    return t.ConnectToWorkerAddress(server.address);
  }
  return t.Connect("127.0.0.1", server.port);
}

TEST_CASE("two processes exchange 10,000 mixed-size messages with checksums") {
  for (const Setting& s : {kTcp, kShm}) {
    SECTION(s.name) {
      const std::string dir = MakeTempDir("exchange");
      Server server = StartServer(s, dir);
      auto client = Subprocess::Start(
          {Peer(), "client", "--server_file=" + server.ready_file,
           std::string("--via=") + s.via, "--messages=10000", "--seed=7"},
          Env(s), dir + "/client.log");
      REQUIRE(client.ok());
      auto code = (*client)->Wait(absl::Now() + absl::Seconds(240));
      REQUIRE(code.ok());
      INFO((*client)->Output());
      CHECK(*code == 0);
      CHECK((*client)->Output().find("CLIENT ok messages=10000") !=
            std::string::npos);
      // The log names the transport the endpoint got.
      if (std::string(s.via) == "address") {
        CHECK((*client)->Output().find("memory") != std::string::npos);
      } else {
        CHECK((*client)->Output().find("tcp") != std::string::npos);
      }
      const std::string stats = StopAndCollectStats(server);
      INFO(stats);
      CHECK(stats.find("bad=0 ") != std::string::npos);
    }
  }
}

// User plus system CPU seconds process `pid` has used (/proc/PID/stat).
double CpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Fields after the command name, which ends with the last ')': state is
  // field 3, utime and stime fields 14 and 15.
  std::vector<std::string> fields =
      absl::StrSplit(text.substr(text.rfind(')') + 2), ' ');
  REQUIRE(fields.size() > 13);
  double utime = 0, stime = 0;
  REQUIRE(absl::SimpleAtod(fields[11], &utime));
  REQUIRE(absl::SimpleAtod(fields[12], &stime));
  return (utime + stime) / sysconf(_SC_CLK_TCK);
}

// One 8 MiB echo (PULL) from `local` to `peer`: how it ended.
absl::Status BigCall(Transport& local, PeerId peer) {
  std::vector<uint8_t> big(8 << 20, 0x5A), reply(8 << 20);
  WireHeader h;
  h.kind = MessageKind::kPull;
  return local
      .Call(peer, h, big, absl::MakeSpan(reply), absl::Now() + absl::Seconds(20))
      .Wait(absl::Now() + absl::Seconds(30));
}

TEST_CASE("a peer killed with SIGKILL mid-transfer never hangs the others") {
  for (const Setting& s : {kTcp, kShm}) {
    SECTION(s.name) {
      const std::string dir = MakeTempDir("kill");
      Server server = StartServer(s, dir);
      // A client blasting the server is killed mid-transfer; the server
      // must keep serving others.
      auto blaster = Subprocess::Start(
          {Peer(), "client", "--server_file=" + server.ready_file,
           std::string("--via=") + s.via, "--messages=0", "--window=32"},
          Env(s), dir + "/blaster.log");
      REQUIRE(blaster.ok());
      auto local = LocalTransport(s, 2);
      auto peer = ConnectLocal(*local, s, server);
      REQUIRE(peer.ok());
      REQUIRE(BigCall(*local, *peer).ok());
      (*blaster)->Signal(SIGKILL);
      REQUIRE((*blaster)->Wait(absl::Now() + absl::Seconds(10)).ok());
      const absl::Time killed = absl::Now();
      const absl::Status after = BigCall(*local, *peer);
      INFO(after << "\nserver log:\n" << server.process->Output());
      if (std::string(s.via) == "address" && !after.ok()) {
        // The kill landed inside a send into the server's shared-memory
        // FIFO and wedged it (the next test makes that happen on purpose):
        // the survivor must learn it within the peer timeout.
        CHECK(after.code() == absl::StatusCode::kUnavailable);
        CHECK(absl::Now() - killed < absl::Seconds(8));
        WARN("the killed blaster wedged the server's shared-memory FIFO");
      } else {
        CHECK(after.ok());
      }
    }
  }
}

TEST_CASE("a server killed with large calls in flight fails each of them in time") {
  for (const Setting& s : {kTcp, kShm}) {
    SECTION(s.name) {
      const std::string dir = MakeTempDir("server_kill");
      Server server = StartServer(s, dir);
      auto local = LocalTransport(s, 2);
      auto peer = ConnectLocal(*local, s, server);
      REQUIRE(peer.ok());
      REQUIRE(BigCall(*local, *peer).ok());
      // Each call fails with UNAVAILABLE within the peer timeout, none
      // hangs.
      std::vector<uint8_t> big(8 << 20, 0x5A);
      std::vector<std::vector<uint8_t>> replies(8, std::vector<uint8_t>(8 << 20));
      std::vector<Ticket> pending;
      WireHeader h;
      h.kind = MessageKind::kPull;
      for (auto& r : replies) {
        pending.push_back(local->Call(*peer, h, big, absl::MakeSpan(r),
                                      absl::Now() + absl::Seconds(60)));
      }
      server.process->Signal(SIGKILL);
      const absl::Time killed = absl::Now();
      int failed = 0;
      for (Ticket& t : pending) {
        const absl::Status status = t.Wait(killed + absl::Seconds(15));
        REQUIRE(status.code() != absl::StatusCode::kDeadlineExceeded);
        if (!status.ok()) {
          CHECK(status.code() == absl::StatusCode::kUnavailable);
          ++failed;
        }
      }
      CHECK(absl::Now() - killed < absl::Seconds(10));
      CHECK(failed >= 1);
      CHECK(local->stats().peers_lost == 1);
      // Later calls fail at once instead of waiting.
      CHECK(local->Call(*peer, h, {}, {}, absl::Now() + absl::Seconds(30))
                .Wait(absl::Now() + absl::Seconds(1))
                .code() == absl::StatusCode::kUnavailable);
    }
  }
}

// UCX 1.13's shared-memory transport has one receive FIFO per process that
// every sender reserves slots in; a sender that dies between reserving a
// slot and publishing it stops that FIFO for good. shm_wedge_peer dies
// exactly there. The receiver's other shared-memory peers must fail within
// the peer timeout instead of hanging, and its TCP peers must not notice.
TEST_CASE("a shared-memory peer that dies inside a send: the others fail in time, TCP goes on") {
  const Setting both{"shared memory and tcp", "sm,self,tcp", "address"};
  const std::string dir = MakeTempDir("wedge");
  Server server = StartServer(both, dir);
  auto local = LocalTransport(both, 2);
  auto peer = ConnectLocal(*local, both, server);
  REQUIRE(peer.ok());
  REQUIRE(local->PeerTransportName(*peer).value_or("").find("memory") != std::string::npos);
  REQUIRE(BigCall(*local, *peer).ok());

  const absl::Status stopped =
      testing::StopFifoOf(server.ready_file, Env(both), dir + "/wedge.log");
  INFO(stopped);
  REQUIRE(stopped.ok());

  const absl::Time wedged = absl::Now();
  const absl::Status after = BigCall(*local, *peer);
  INFO(after << "\nserver log:\n" << server.process->Output());
  CHECK(after.code() == absl::StatusCode::kUnavailable);
  CHECK(absl::Now() - wedged < absl::Seconds(8));
  CHECK(local->stats().peers_lost == 1);

  // The server knows (UCX keeps saying events are pending that never come)
  // and polls each millisecond instead of spinning a core: well under half
  // a core over two seconds, where spinning takes all of one.
  const double cpu_before = CpuSeconds(server.process->pid());
  absl::SleepFor(absl::Seconds(2));
  const double cpu = CpuSeconds(server.process->pid()) - cpu_before;
  CHECK(cpu < 1.0);
  CHECK(server.process->Output().find("stopped this process's shared-memory FIFO") !=
        std::string::npos);

  // The same server over TCP: unaffected.
  auto tcp = LocalTransport(both, 3);
  auto tcp_peer = tcp->Connect("127.0.0.1", server.port);
  REQUIRE(tcp_peer.ok());
  CHECK(tcp->PeerTransportName(*tcp_peer).value_or("").find("tcp") != std::string::npos);
  CHECK(BigCall(*tcp, *tcp_peer).ok());
  const std::string stats = StopAndCollectStats(server);
  INFO(stats);
  CHECK(stats.find("stalls=1") != std::string::npos);
}

TEST_CASE("a peer that never says HELLO is disconnected and counted") {
  for (const Setting& s : {kTcp, kShm}) {
    SECTION(s.name) {
      const std::string dir = MakeTempDir("silent");
      Server server = StartServer(s, dir);
      auto silent = LocalTransport(s, 3);
      absl::StatusOr<PeerId> peer =
          std::string(s.via) == "address"
              ? silent->ConnectToWorkerAddressWithoutHandshakeForTesting(
                    server.address)
              : silent->ConnectWithoutHandshakeForTesting("127.0.0.1",
                                                          server.port);
      REQUIRE(peer.ok());
      // Make the server see this peer (over shared memory, UCX creates the
      // server's endpoint on first contact): a PUSH before HELLO.
      WireHeader h;
      h.kind = MessageKind::kPush;
      std::vector<uint8_t> bytes(16, 1);
      silent->Send(*peer, h, bytes).Wait(absl::Now() + absl::Seconds(5));
      // An honest client still gets through afterwards.
      auto honest = LocalTransport(s, 4);
      auto good = ConnectLocal(*honest, s, server);
      REQUIRE(good.ok());
      h.kind = MessageKind::kPull;
      REQUIRE(honest->Call(*good, h, bytes, {}, absl::Now() + absl::Seconds(10))
                  .Wait(absl::Now() + absl::Seconds(30))
                  .ok());
      const std::string stats = StopAndCollectStats(server);
      INFO(stats);
      CHECK(stats.find("unauthenticated=1 ") != std::string::npos);
    }
  }
}

TEST_CASE("a listener connection that stays silent times out without HELLO") {
  const std::string dir = MakeTempDir("idle");
  Server server = StartServer(kTcp, dir);
  // The server drops it (its handshake timeout, or UCX's endpoint timeout
  // first) and counts a handshake failure; the connection is reset and this
  // side notices. A connection that UCX resets before the server even
  // registered it (seen once in many runs within a millisecond of
  // connecting, and once on a loaded CI machine after 3 s, the server's log
  // and counters empty) proves nothing about the timeout: retry it. The
  // server logs one warning naming "(accepted from ...)" for every session
  // it drops, whichever timeout came first (no session here gets ready).
  const auto sessions_dropped = [&] {
    const std::string log = server.process->Output();
    const std::string mark = "(accepted from";
    size_t n = 0;
    for (size_t at = log.find(mark); at != std::string::npos; at = log.find(mark, at + 1)) ++n;
    return n;
  };
  bool timed_out = false;
  for (int attempt = 0; attempt < 3 && !timed_out; ++attempt) {
    const size_t dropped_before = sessions_dropped();
    auto idle = LocalTransport(kTcp, 5);
    auto peer =
        idle->ConnectWithoutHandshakeForTesting("127.0.0.1", server.port);
    REQUIRE(peer.ok());
    const absl::Time start = absl::Now();
    while (idle->stats().peers_lost == 0 &&
           absl::Now() - start < absl::Seconds(20)) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    REQUIRE(idle->stats().peers_lost == 1);
    const bool late = absl::Now() - start > absl::Seconds(2);
    // The server's log line may still be on its way through the pipe.
    const absl::Time logged_by = absl::Now() + absl::Seconds(2);
    while (sessions_dropped() == dropped_before && absl::Now() < logged_by) {
      absl::SleepFor(absl::Milliseconds(50));
    }
    const bool seen = sessions_dropped() > dropped_before;
    timed_out = late && seen;
    if (!timed_out) {
      WARN("connection lost " << (late ? "with no session on the server" : "early")
                              << "; server log:\n"
                              << server.process->Output());
    }
  }
  CHECK(timed_out);
  const size_t dropped = sessions_dropped();
  const std::string stats = StopAndCollectStats(server);
  INFO(stats);
  // One failure for each session the server dropped (a retried attempt's
  // included), and at least the one that timed out.
  CHECK(stats.find(absl::StrCat("handshake_failures=", dropped, " ")) != std::string::npos);
  CHECK(dropped >= 1);
}

TEST_CASE("garbage bytes at the listening port do not hurt the server") {
  const std::string dir = MakeTempDir("garbage");
  Server server = StartServer(kTcp, dir);
  std::mt19937 rng(1234);
  for (int round = 0; round < 5; ++round) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(server.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    std::vector<uint8_t> junk(1 << (10 + round * 2));
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    ssize_t unused = write(fd, junk.data(), junk.size());
    (void)unused;
    close(fd);
  }
  auto client = LocalTransport(kTcp, 6);
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  std::vector<uint8_t> payload(100000, 7), reply(100000);
  WireHeader h;
  h.kind = MessageKind::kPull;
  REQUIRE(client->Call(*peer, h, payload, absl::MakeSpan(reply),
                       absl::Now() + absl::Seconds(10))
              .Wait(absl::Now() + absl::Seconds(30))
              .ok());
  CHECK(reply == payload);
  StopAndCollectStats(server);
}

}  // namespace
}  // namespace leeway
