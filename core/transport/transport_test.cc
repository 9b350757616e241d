// In-process tests of the UCX transport: two Transports (each with its own
// UCP worker and progress thread) talking over loopback. Cross-process
// tests live in tests/transport_*.
#include "core/transport/transport.h"

#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

#include "absl/synchronization/notification.h"
#include "catch2/catch.hpp"
#include "core/transport/hello.h"

namespace leeway {
namespace {

TransportOptions Options(uint32_t rank, std::string token = "test-token") {
  TransportOptions options;
  options.job_id = 42;
  options.rank = rank;
  options.token = std::move(token);
  options.limits.max_payload_bytes = 32u << 20;
  options.handshake_timeout = absl::Seconds(3);
  options.peer_timeout = absl::Seconds(2);
  return options;
}

std::unique_ptr<Transport> MakeTransport(TransportOptions options) {
  auto t = Transport::Create(options);
  REQUIRE(t.ok());
  return std::move(*t);
}

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

// A server that echoes PULL payloads back as PULL_REPLY.
struct EchoServer {
  std::unique_ptr<Transport> transport;
  uint16_t port = 0;

  explicit EchoServer(TransportOptions options = Options(0)) {
    transport = MakeTransport(options);
    Transport* t = transport.get();
    t->SetHandler(MessageKind::kPull, [t](Message m) {
      WireHeader reply;
      reply.kind = MessageKind::kPullReply;
      reply.layer = m.header.layer;
      t->Reply(m, reply, m.payload);
    });
    auto bound = t->Listen("127.0.0.1", 0);
    REQUIRE(bound.ok());
    port = *bound;
  }
};

std::vector<uint8_t> Pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

Ticket Pull(Transport& t, PeerId peer, const std::vector<uint8_t>& payload,
            absl::Span<uint8_t> reply_buffer) {
  WireHeader h;
  h.kind = MessageKind::kPull;
  h.layer = 3;
  return t.Call(peer, h, payload, reply_buffer, Soon());
}

TEST_CASE("calls round-trip through a listener, small and rendezvous") {
  EchoServer server;
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  for (size_t size : {size_t{0}, size_t{1}, size_t{4096}, size_t{4} << 20}) {
    const auto payload = Pattern(size, static_cast<uint8_t>(size));
    std::vector<uint8_t> reply_buffer(size);
    Ticket t = Pull(*client, *peer, payload, absl::MakeSpan(reply_buffer));
    REQUIRE(t.Wait(Soon()).ok());
    CHECK(t.reply().header.kind == MessageKind::kPullReply);
    CHECK(t.reply().header.layer == 3);
    CHECK(t.reply().header.sender_rank == 0);
    REQUIRE(t.reply().payload.size() == size);
    // The reply landed in the caller's buffer, not in a copy.
    if (size > 0) CHECK(t.reply().payload.data() == reply_buffer.data());
    CHECK(reply_buffer == payload);
  }
  auto name = client->PeerTransportName(*peer);
  REQUIRE(name.ok());
  CHECK(name->find("tcp") != std::string::npos);
  CHECK(server.transport->ConnectedPeers() == 1);
}

TEST_CASE("replies can be served from a lent buffer without a copy") {
  auto server = MakeTransport(Options(0));
  const std::vector<uint8_t> parameters = Pattern(3 << 20, 4);
  std::vector<Ticket> replies;  // handler-thread only
  server->SetHandler(MessageKind::kPull, [&](Message m) {
    WireHeader h;
    h.kind = MessageKind::kPullReply;
    h.version = 11;
    replies.push_back(server->ReplyFrom(m, h, parameters));
  });
  auto port = server->Listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", *port);
  REQUIRE(peer.ok());
  std::vector<uint8_t> reply(parameters.size());
  Ticket t = Pull(*client, *peer, {}, absl::MakeSpan(reply));
  REQUIRE(t.Wait(Soon()).ok());
  CHECK(t.reply().header.version == 11);
  CHECK(reply == parameters);
}

TEST_CASE("a shared reply stays alive until it is sent") {
  auto server = MakeTransport(Options(0));
  server->SetHandler(MessageKind::kPull, [&](Message m) {
    // The handler's reference goes at once; the transport keeps its own.
    auto body = std::make_shared<std::vector<uint8_t>>(
        Pattern(m.header.element_count, static_cast<uint8_t>(m.header.layer)));
    WireHeader h;
    h.kind = MessageKind::kPullReply;
    server->ReplyShared(m, h, std::move(body));
  });
  auto port = server->Listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", *port);
  REQUIRE(peer.ok());
  for (uint32_t size : {0u, 100u, 4u << 20}) {
    WireHeader h;
    h.kind = MessageKind::kPull;
    h.layer = 7;
    h.element_count = size;
    std::vector<uint8_t> reply(size);
    Ticket t = client->Call(*peer, h, {}, absl::MakeSpan(reply), Soon());
    REQUIRE(t.Wait(Soon()).ok());
    CHECK(t.reply().payload.size() == size);
    CHECK(reply == Pattern(size, 7));
  }
}

TEST_CASE("Transport::Wait drives progress on the caller's thread") {
  EchoServer server;
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  // Many small operations, each waited for by the caller-driven path.
  for (int i = 0; i < 2000; ++i) {
    const auto payload = Pattern(64 + i % 512, static_cast<uint8_t>(i));
    std::vector<uint8_t> reply(payload.size());
    Ticket t = Pull(*client, *peer, payload, absl::MakeSpan(reply));
    REQUIRE(client->Wait(t, Soon()).ok());
    REQUIRE(reply == payload);
  }
  // Its deadline holds when no reply comes.
  server.transport->SetHandler(MessageKind::kPull, [](Message) {});
  WireHeader h;
  h.kind = MessageKind::kPull;
  Ticket silent = client->Call(*peer, h, {}, {}, absl::InfiniteFuture());
  const absl::Time start = absl::Now();
  CHECK(client->Wait(silent, absl::Now() + absl::Milliseconds(200)).code() ==
        absl::StatusCode::kDeadlineExceeded);
  CHECK(absl::Now() - start < absl::Seconds(2));
}

TEST_CASE("worker-address endpoints carry calls too") {
  EchoServer server;
  auto address = server.transport->WorkerAddress();
  REQUIRE(address.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->ConnectToWorkerAddress(*address);
  REQUIRE(peer.ok());
  const auto payload = Pattern(1 << 20, 9);
  std::vector<uint8_t> reply_buffer(1 << 20);
  Ticket t = Pull(*client, *peer, payload, absl::MakeSpan(reply_buffer));
  REQUIRE(t.Wait(Soon()).ok());
  CHECK(reply_buffer == payload);
}

TEST_CASE("a buffer provider receives payloads in place") {
  auto server = MakeTransport(Options(0));
  std::vector<uint8_t> destination(2 << 20);
  absl::Notification got;
  Message received;
  server->SetHandler(
      MessageKind::kPush,
      [&](Message m) {
        received = std::move(m);
        got.Notify();
      },
      [&](const WireHeader& h) -> absl::StatusOr<absl::Span<uint8_t>> {
        if (h.layer != 5) return absl::NotFoundError("unknown layer");
        return absl::MakeSpan(destination);
      });
  auto port = server->Listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", *port);
  REQUIRE(peer.ok());
  const auto payload = Pattern(2 << 20, 1);
  WireHeader h;
  h.kind = MessageKind::kPush;
  h.layer = 5;
  REQUIRE(client->Send(*peer, h, payload).Wait(Soon()).ok());
  REQUIRE(got.WaitForNotificationWithTimeout(absl::Seconds(5)));
  CHECK(received.payload.data() == destination.data());
  CHECK(destination == payload);

  // A provider's refusal reaches the sender as ERROR (and the counter).
  h.layer = 6;
  h.kind = MessageKind::kPush;
  Ticket refused = client->Call(*peer, h, payload, {}, Soon());
  CHECK(refused.Wait(Soon()).code() != absl::StatusCode::kOk);
  CHECK(server->stats().bad_messages >= 1);
}

TEST_CASE("the handshake refuses a wrong token") {
  EchoServer server;
  auto intruder = MakeTransport(Options(1, "wrong-token"));
  auto peer = intruder->Connect("127.0.0.1", server.port);
  REQUIRE_FALSE(peer.ok());
  CHECK(peer.status().message().find("handshake failed") != std::string::npos);
  CHECK(intruder->stats().handshake_failures == 1);
  CHECK(server.transport->ConnectedPeers() == 0);
}

TEST_CASE("the server checks the client's proof") {
  EchoServer server;
  auto rude = MakeTransport(Options(1));
  auto peer = rude->ConnectWithoutHandshakeForTesting("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  HelloPayload hello;
  hello.stage = HelloStage::kClientHello;
  hello.nonce.fill(1);
  std::string bytes = EncodeHello(hello);
  WireHeader h;
  h.kind = MessageKind::kHello;
  Ticket challenge = rude->Call(
      *peer, h,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                          bytes.size()),
      {}, Soon());
  REQUIRE(challenge.Wait(Soon()).ok());
  hello.stage = HelloStage::kResponse;
  hello.mac.fill(0xAB);  // not the proof of the token
  bytes = EncodeHello(hello);
  Ticket response = rude->Call(
      *peer, h,
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(bytes.data()),
                          bytes.size()),
      {}, Soon());
  CHECK(response.Wait(Soon()).code() == absl::StatusCode::kUnauthenticated);
  CHECK(server.transport->stats().handshake_failures == 1);
  CHECK(server.transport->ConnectedPeers() == 0);
}

TEST_CASE("the handshake refuses a peer of another job") {
  EchoServer server;
  TransportOptions other = Options(1);
  other.job_id = 7;
  auto stranger = MakeTransport(other);
  CHECK_FALSE(stranger->Connect("127.0.0.1", server.port).ok());
  CHECK(server.transport->stats().bad_messages >= 1);
}

TEST_CASE("nothing but HELLO is accepted before the handshake") {
  EchoServer server;
  auto rude = MakeTransport(Options(1));
  auto peer = rude->ConnectWithoutHandshakeForTesting("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  const auto payload = Pattern(64, 0);
  Ticket t = Pull(*rude, *peer, payload, {});
  const absl::Status status = t.Wait(Soon());
  CHECK_FALSE(status.ok());
  CHECK(server.transport->stats().unauthenticated_messages == 1);
}

TEST_CASE("malformed frames get ERROR replies and counters, never a crash") {
  EchoServer server;
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  WireHeader h;
  h.kind = MessageKind::kPull;
  h.job_id = 42;
  h.sender_rank = 1;
  const auto payload = Pattern(100, 3);
  auto encode = [](WireHeader header) {
    std::vector<uint8_t> bytes(kWireHeaderSize);
    EncodeHeader(header, bytes.data());
    return bytes;
  };
  std::vector<std::vector<uint8_t>> headers;
  std::vector<unsigned> ids;
  // Payload length disagrees with the header (shorter, then longer).
  h.payload_bytes = 101;
  headers.push_back(encode(h));
  ids.push_back(3);
  h.payload_bytes = 99;
  headers.push_back(encode(h));
  ids.push_back(3);
  // Truncated header.
  h.payload_bytes = 100;
  headers.push_back(encode(h));
  headers.back().resize(40);
  ids.push_back(3);
  // Wrong magic.
  headers.push_back(encode(h));
  headers.back()[0] ^= 0xFF;
  ids.push_back(3);
  // AM id of an unknown kind, and an id that disagrees with the kind.
  headers.push_back(encode(h));
  ids.push_back(20);
  headers.push_back(encode(h));
  ids.push_back(2);
  // Payload over the configured maximum (header claims it).
  WireHeader huge = h;
  huge.payload_bytes = 64u << 20;
  headers.push_back(encode(huge));
  ids.push_back(3);
  for (size_t i = 0; i < headers.size(); ++i) {
    CHECK(client->SendRawForTesting(*peer, ids[i], headers[i], payload)
              .Wait(Soon())
              .ok());
  }
  // The server is still alive and serving this client.
  std::vector<uint8_t> reply(payload.size());
  REQUIRE(Pull(*client, *peer, payload, absl::MakeSpan(reply)).Wait(Soon()).ok());
  CHECK(reply == payload);
  CHECK(server.transport->stats().bad_messages == headers.size());
  CHECK(server.transport->stats().errors_sent >= headers.size());
}

TEST_CASE("a host:port endpoint without a network transport is a clear error") {
  EchoServer server;
  const char* before = getenv("UCX_TLS");
  const std::string saved = before ? before : "";
  setenv("UCX_TLS", "sm,self", 1);
  auto client = MakeTransport(Options(1));
  if (before) setenv("UCX_TLS", saved.c_str(), 1); else unsetenv("UCX_TLS");
  absl::StatusOr<PeerId> peer = client->Connect("127.0.0.1", server.port);
  CHECK(peer.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(peer.status().message().find("no network transport") != std::string::npos);
  client.reset();  // and nothing trips on the way out
}

TEST_CASE("a call without a reply ends at its deadline") {
  auto server = MakeTransport(Options(0));
  server->SetHandler(MessageKind::kPull, [](Message) { /* never replies */ });
  auto port = server->Listen("127.0.0.1", 0);
  REQUIRE(port.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", *port);
  REQUIRE(peer.ok());
  WireHeader h;
  h.kind = MessageKind::kPull;
  Ticket t = client->Call(*peer, h, {}, {}, absl::Now() + absl::Milliseconds(200));
  CHECK(t.Wait(Soon()).code() == absl::StatusCode::kDeadlineExceeded);
}

TEST_CASE("a peer that goes away fails pending calls") {
  auto server = std::make_unique<EchoServer>();
  server->transport->SetHandler(MessageKind::kPull, [](Message) {});
  auto client = MakeTransport(Options(1));
  std::atomic<PeerId> lost{0};
  client->SetPeerLostHandler([&](PeerId p, const absl::Status&) { lost = p; });
  auto peer = client->Connect("127.0.0.1", server->port);
  REQUIRE(peer.ok());
  WireHeader h;
  h.kind = MessageKind::kPull;
  Ticket t = client->Call(*peer, h, {}, {}, absl::Now() + absl::Seconds(30));
  server.reset();
  const absl::Status status = t.Wait(absl::Now() + absl::Seconds(10));
  CHECK(status.code() == absl::StatusCode::kUnavailable);
  CHECK(client->stats().peers_lost == 1);
  CHECK(lost.load() == *peer);  // the handler was told
}

TEST_CASE("a call carries the caller's flags") {
  EchoServer server;
  std::atomic<int> flags{-1};
  server.transport->SetHandler(MessageKind::kPush, [&](Message m) {
    flags = m.header.flags;
    server.transport->Reply(m, m.header, {});
  });
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  WireHeader h;
  h.kind = MessageKind::kPush;
  h.flags = kFlagInitial;
  REQUIRE(client->Call(*peer, h, {}, {}, Soon()).Wait(Soon()).ok());
  CHECK(flags.load() == (kFlagInitial | kFlagExpectsReply));
}

TEST_CASE("handlers can replace themselves, and a removed one is refused") {
  EchoServer server;
  Transport* t = server.transport.get();
  std::atomic<int> second_calls{0};
  t->SetHandler(MessageKind::kPull, [t, &second_calls](Message m) {
    WireHeader reply;
    reply.kind = MessageKind::kPullReply;
    reply.version = 1;
    t->Reply(m, reply, {});
    // Replaced from inside itself: the running handler stays valid.
    t->SetHandler(MessageKind::kPull, [t, &second_calls](Message m) {
      ++second_calls;
      WireHeader reply;
      reply.kind = MessageKind::kPullReply;
      reply.version = 2;
      t->Reply(m, reply, {});
    });
  });
  auto client = MakeTransport(Options(1));
  auto peer = client->Connect("127.0.0.1", server.port);
  REQUIRE(peer.ok());
  for (uint64_t want : {1, 2, 2}) {
    Ticket call = Pull(*client, *peer, {}, {});
    REQUIRE(call.Wait(Soon()).ok());
    CHECK(call.reply().header.version == want);
  }
  CHECK(second_calls.load() == 2);
  // Once SetHandler returns, no message reaches the removed handler.
  t->SetHandler(MessageKind::kPull, nullptr);
  Ticket refused = Pull(*client, *peer, {}, {});
  CHECK(refused.Wait(Soon()).code() == absl::StatusCode::kUnimplemented);
  CHECK(second_calls.load() == 2);
}

TEST_CASE("a burst of small sends arrives whole and in order") {
  auto server = MakeTransport(Options(0));
  constexpr int kSends = 5000;
  std::vector<uint32_t> order;  // handler-thread only until `all` fires
  bool intact = true;
  absl::Notification all;
  server->SetHandler(MessageKind::kPush, [&](Message m) {
    intact &= m.payload.size() == 4096 &&
              m.payload[4095] == static_cast<uint8_t>(m.header.chunk);
    order.push_back(m.header.chunk);
    if (order.size() == kSends) all.Notify();
  });
  auto address = server->WorkerAddress();
  REQUIRE(address.ok());
  auto client = MakeTransport(Options(1));
  auto peer = client->ConnectToWorkerAddress(*address);
  REQUIRE(peer.ok());
  std::vector<std::vector<uint8_t>> payloads;
  for (int i = 0; i < 256; ++i) payloads.push_back(Pattern(4096, i - 4095 * 7));
  std::vector<Ticket> tickets;
  int done_at_once = 0;
  for (int i = 0; i < kSends; ++i) {
    WireHeader h;
    h.kind = MessageKind::kPush;
    h.chunk = static_cast<uint32_t>(i);
    tickets.push_back(client->Send(*peer, h, payloads[i % 256]));
    done_at_once += tickets.back().done();
    // A window of 64, as a worker keeps a layer's chunks in flight.
    if (tickets.size() >= 64) {
      REQUIRE(client->Wait(tickets.front(), Soon()).ok());
      tickets.erase(tickets.begin());
    }
  }
  for (Ticket& ticket : tickets) REQUIRE(client->Wait(ticket, Soon()).ok());
  REQUIRE(all.WaitForNotificationWithTimeout(absl::Seconds(20)));
  CHECK(intact);
  std::vector<uint32_t> expected(kSends);
  std::iota(expected.begin(), expected.end(), 0u);
  CHECK(order == expected);
  CHECK(client->stats().messages_sent >= kSends);
  INFO("sends done inside the call: " << done_at_once);
}

TEST_CASE("sends to an unknown peer fail at once") {
  auto client = MakeTransport(Options(1));
  WireHeader h;
  h.kind = MessageKind::kPush;
  CHECK(client->Send(999, h, {}).Wait(Soon()).code() ==
        absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace leeway
