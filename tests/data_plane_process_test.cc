// The worker's DataPlane (worker/data_plane.h) against a real stall: a
// shared-memory peer that dies inside a send into the data plane's FIFO
// (tests/shm_wedge_peer). The data plane must notice, hand out a new
// transport that peers can reach, and publish its address.
#include <stdlib.h>

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "core/common/file_text.h"
#include "core/transport/transport.h"
#include "tests/stop_fifo.h"
#include "tests/subprocess.h"
#include "worker/data_plane.h"

namespace leeway {
namespace {

using testing::MakeTempDir;

std::map<std::string, std::string> ShmEnvironment() {
  std::map<std::string, std::string> env = testing::LoopbackUcxEnvironment();
  env["UCX_TLS"] = "sm,self";
  return env;
}

TransportOptions Options(uint32_t rank) {
  // UCX reads the environment when a transport makes its context.
  for (const auto& kv : ShmEnvironment()) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  TransportOptions options;
  options.job_id = 7;
  options.rank = rank;
  options.token = "data-plane-test";
  options.handshake_timeout = absl::Seconds(2);
  return options;
}

// The address a ready file names (line 2, hex), or "" if there is none.
std::string AddressIn(const std::string& ready_file) {
  std::vector<std::string> lines = absl::StrSplit(ReadFileOrEmpty(ready_file), '\n');
  if (lines.size() < 2 || lines[0] != "0") return "";
  return absl::HexStringToBytes(lines[1]);
}

// A CLOCK call from `client` to the transport at `address`, which answers it.
absl::Status CallOnce(Transport& client, const std::string& address) {
  absl::StatusOr<PeerId> peer = client.ConnectToWorkerAddress(address);
  if (!peer.ok()) return peer.status();
  WireHeader header;
  header.kind = MessageKind::kClock;
  return client.Call(*peer, header, {}, {}, absl::Now() + absl::Seconds(5)).Wait();
}

void AnswerClocks(Transport* t) {
  t->SetHandler(MessageKind::kClock, [t](Message m) {
    WireHeader reply;
    reply.kind = MessageKind::kClock;
    t->Reply(m, reply, {});
  });
}

TEST_CASE("a healthy data plane keeps its transport and publishes its address") {
  const std::string ready = MakeTempDir("plane") + "/worker.ready";
  auto plane = DataPlane::Create(Options(1), ready);
  REQUIRE(plane.ok());
  absl::StatusOr<Transport*> first = (*plane)->Healthy();
  REQUIRE(first.ok());
  CHECK((*plane)->Healthy().value_or(nullptr) == *first);
  CHECK((*plane)->replacements() == 0);
  CHECK(AddressIn(ready) == (*first)->WorkerAddress().value_or("?"));

  AnswerClocks(*first);
  auto client = Transport::Create(Options(2));
  REQUIRE(client.ok());
  CHECK(CallOnce(**client, AddressIn(ready)).ok());
  CHECK((*plane)->stats().messages_received == (*first)->stats().messages_received);
}

TEST_CASE("a data plane whose FIFO a dying peer stopped is replaced by one that works") {
  const std::string dir = MakeTempDir("plane_wedge");
  const std::string ready = dir + "/worker.ready";
  auto plane = DataPlane::Create(Options(1), ready);
  REQUIRE(plane.ok());
  Transport* old = (*plane)->Healthy().value_or(nullptr);
  REQUIRE(old != nullptr);
  AnswerClocks(old);
  const std::string old_address = AddressIn(ready);
  // A shared-memory peer that keeps talking to it (keepalives): its
  // silence is what tells a stopped FIFO from a busy one.
  auto client = Transport::Create(Options(2));
  REQUIRE(client.ok());
  REQUIRE(CallOnce(**client, old_address).ok());

  const absl::Status stopped = testing::StopFifoOf(ready, ShmEnvironment(), dir + "/wedge.log");
  INFO(stopped);
  REQUIRE(stopped.ok());

  // The stall shows within the detector's window (half the peer timeout).
  Transport* now = old;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (now == old && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(50));
    now = (*plane)->Healthy().value_or(old);
  }
  REQUIRE(now != old);
  CHECK((*plane)->replacements() == 1);
  CHECK((*plane)->stats().stalls >= 1);
  CHECK((*plane)->Healthy().value_or(nullptr) == now);  // replaced once
  const std::string new_address = AddressIn(ready);
  CHECK(new_address == now->WorkerAddress().value_or("?"));
  CHECK(new_address != old_address);

  // The old transport hears nobody over shared memory any more (the
  // handshake's answer never arrives); the new one answers.
  CHECK_FALSE(CallOnce(**client, old_address).ok());
  AnswerClocks(now);
  CHECK(CallOnce(**client, new_address).ok());
}

}  // namespace
}  // namespace leeway
