// Transport: Leeway's UCX data plane for one process.
//
// Peers connect either through a listener on host:port (sockaddr; for peers
// on other hosts, always TCP-class in UCX 1.13) or from a UCP worker address
// exchanged out of band (the coordinator, or a file in tests), which lets
// co-located peers use shared memory. Every connection starts with the
// mutual HELLO handshake (hello.h); nothing else is accepted from a peer
// before it succeeds.
//
// Messages are UCP active messages: the 64-byte wire header (wire.h) as the
// AM header, the payload as AM data. UCX sends small payloads eagerly and
// large ones by rendezvous; a rendezvous payload is received straight into
// a buffer the receiver names beforehand (a call's reply buffer, or a
// handler's BufferProvider), without an extra copy.
//
// Every incoming message is validated before use; a bad one gets an ERROR
// reply and a counter increment (stats()), and a peer that fails the
// handshake is disconnected. Peer loss (connection reset, or silence for
// `peer_timeout` while keepalives go unanswered, which also covers shared
// memory where UCX 1.13 has no peer-failure mode) fails every pending
// operation with that peer with UNAVAILABLE. Every call has a deadline.
// (A shared-memory peer killed inside a send stops this process's
// shared-memory FIFO for every sender, in UCX 1.13: its shared-memory peers
// are then lost this way too, and TCP peers are not; README, data plane.)
//
// Threading: all UCX work runs under one worker lock (progress_loop.h), on
// the progress thread or on a caller thread that sends directly or drives
// progress in Wait(). Public methods are thread-safe; the operations one
// thread issues to a peer go out in the order it issued them. Handlers run
// with the worker lock held, on whichever thread drives, and must not block
// (hand work to another thread and Reply() from there).
//
// Example:
//   LEEWAY_ASSIGN_OR_RETURN(auto t, Transport::Create(options));
//   t->SetHandler(MessageKind::kPull, [&](Message m) { ...; t->Reply(m, h, p); });
//   LEEWAY_ASSIGN_OR_RETURN(uint16_t port, t->Listen("127.0.0.1", 0));
//   // elsewhere:
//   LEEWAY_ASSIGN_OR_RETURN(PeerId peer, client->Connect("127.0.0.1", port));
//   Ticket call = client->Call(peer, header, request, reply_buffer, deadline);
#ifndef LEEWAY_CORE_TRANSPORT_TRANSPORT_H_
#define LEEWAY_CORE_TRANSPORT_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/transport/message.h"
#include "core/transport/ticket.h"
#include "core/transport/wire.h"

namespace leeway {

struct TransportOptions {
  uint64_t job_id = 0;
  uint32_t rank = 0;
  // The cluster token; both ends of a connection must hold the same one.
  std::string token;
  WireLimits limits;
  absl::Duration handshake_timeout = absl::Seconds(5);
  // A peer silent this long is lost; keepalives go out after a quarter.
  absl::Duration peer_timeout = absl::Seconds(3);
  // Poll this long after the last event before sleeping on the wakeup fd,
  // where polling catches events (spin_policy.h; not on a slow TCP link).
  // Short: on few cores a polling thread steals the CPU its peers need
  // (bench/transport_bench --busy_poll_us measured 50 us best on 2 cores).
  absl::Duration busy_poll = absl::Microseconds(50);
};

// Counters since Create(); read with relaxed loads, for metrics and tests.
struct TransportStats {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t bad_messages = 0;          // failed validation
  uint64_t unauthenticated_messages = 0;  // arrived before HELLO succeeded
  uint64_t handshake_failures = 0;
  uint64_t peers_lost = 0;
  uint64_t errors_sent = 0;
  uint64_t errors_received = 0;
  // Times UCX said events were pending that never came (progress_loop.h):
  // a shared-memory FIFO stopped by a peer that died inside a send.
  uint64_t stalls = 0;

  // Field by field (the counters of several transports).
  TransportStats& operator+=(const TransportStats& o) {
    messages_sent += o.messages_sent;
    messages_received += o.messages_received;
    bytes_sent += o.bytes_sent;
    bytes_received += o.bytes_received;
    bad_messages += o.bad_messages;
    unauthenticated_messages += o.unauthenticated_messages;
    handshake_failures += o.handshake_failures;
    peers_lost += o.peers_lost;
    errors_sent += o.errors_sent;
    errors_received += o.errors_received;
    stalls += o.stalls;
    return *this;
  }
};

// Supplies the buffer a message's payload lands in, given its header;
// returning an error rejects the message (the sender gets ERROR).
using BufferProvider =
    std::function<absl::StatusOr<absl::Span<uint8_t>>(const WireHeader&)>;
using MessageHandler = std::function<void(Message)>;
// Told when an authenticated peer is lost (reset, or silent too long).
using PeerLostHandler = std::function<void(PeerId, const absl::Status&)>;

class Transport {
 public:
  static absl::StatusOr<std::unique_ptr<Transport>> Create(
      const TransportOptions& options);
  // Fails every pending operation with CANCELLED, closes every endpoint,
  // and stops the progress thread; bounded in time.
  ~Transport();

  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // This process's UCP worker address, to publish out of band.
  absl::StatusOr<std::string> WorkerAddress();

  // Accepts connections on host:port (port 0 picks one); returns the port.
  absl::StatusOr<uint16_t> Listen(const std::string& host, uint16_t port);

  // Connects and runs the handshake; returns the peer once it succeeded.
  absl::StatusOr<PeerId> Connect(const std::string& host, uint16_t port);
  absl::StatusOr<PeerId> ConnectToWorkerAddress(const std::string& address);

  // Handler for incoming requests of `kind` (not HELLO/KEEPALIVE/ERROR,
  // which the transport handles). Thread-safe; may be replaced at any time.
  void SetHandler(MessageKind kind, MessageHandler handler,
                  BufferProvider provider = nullptr);

  // Runs on the thread that notices the loss, with the worker lock held:
  // it must not block. Replaces any earlier handler.
  void SetPeerLostHandler(PeerLostHandler handler);

  // One-way send. `payload` must stay valid until the ticket is done.
  Ticket Send(PeerId peer, const WireHeader& header,
              absl::Span<const uint8_t> payload);
  // Request/response: the reply's payload lands in `reply_buffer` when it
  // fits (else in Message::owned). Buffers must stay valid until done.
  Ticket Call(PeerId peer, const WireHeader& header,
              absl::Span<const uint8_t> payload,
              absl::Span<uint8_t> reply_buffer, absl::Time deadline);
  // Answers `request`. The payload is copied; returns at once.
  void Reply(const Message& request, const WireHeader& header,
             absl::Span<const uint8_t> payload);
  // Answers `request` without a copy: `payload` must stay valid until the
  // ticket is done (for replies served straight from a parameter store).
  Ticket ReplyFrom(const Message& request, const WireHeader& header,
                   absl::Span<const uint8_t> payload);
  // Answers `request` without a copy, keeping `payload` (null: empty)
  // alive until UCX is done with it: for replies that are shared with
  // other readers or outlive the caller's scope.
  Ticket ReplyShared(const Message& request, const WireHeader& header,
                     std::shared_ptr<const std::vector<uint8_t>> payload);
  // Answers `request` with ERROR carrying `status`.
  void ReplyError(const Message& request, const absl::Status& status);

  // Waits for a ticket of this transport like Ticket::Wait, but drives UCX
  // on the calling thread while operations keep completing, which saves the
  // hand-over to the progress thread (two context switches) per operation.
  // Use it from threads that issue many small operations.
  absl::Status Wait(const Ticket& ticket,
                    absl::Time deadline = absl::InfiniteFuture());

  // The UCX transports the endpoint to `peer` uses, e.g. "tcp/lo" or
  // "sysv/memory,cma/memory".
  absl::StatusOr<std::string> PeerTransportName(PeerId peer);
  // The number of connected, authenticated peers.
  int ConnectedPeers();

  TransportStats stats() const;
  const TransportOptions& options() const;

  // Testing hooks: raw frames and connections without a handshake, so that
  // tests can send what a broken or hostile peer would.
  absl::StatusOr<PeerId> ConnectWithoutHandshakeForTesting(
      const std::string& host, uint16_t port);
  absl::StatusOr<PeerId> ConnectToWorkerAddressWithoutHandshakeForTesting(
      const std::string& address);
  Ticket SendRawForTesting(PeerId peer, unsigned am_id,
                           absl::Span<const uint8_t> header_bytes,
                           absl::Span<const uint8_t> payload);

  class Impl;

 private:
  explicit Transport(std::unique_ptr<Impl> impl);
  // Stamps job, rank and payload size into `header` and sends it; `hold`
  // (if any) stays alive until the send is done.
  Ticket SendStamped(PeerId peer, WireHeader header,
                     absl::Span<const uint8_t> payload,
                     std::shared_ptr<const void> hold = nullptr);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_TRANSPORT_H_
