// Internal: the state behind Transport. Everything here runs with the
// worker lock held (progress_loop.h), on the progress thread or on a caller
// thread that drives, unless a method says otherwise; that is what makes the
// maps below safe without further locks. Split across transport.cc (API,
// ticks, shutdown), transport_send.cc (sending, calls), transport_receive.cc
// (incoming messages),
// transport_session.cc (connections, keepalive, peer loss) and
// transport_handshake.cc (HELLO).
#ifndef LEEWAY_CORE_TRANSPORT_TRANSPORT_IMPL_H_
#define LEEWAY_CORE_TRANSPORT_TRANSPORT_IMPL_H_

#include <ucp/api/ucp.h>

#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "core/transport/hello.h"
#include "core/transport/progress_loop.h"
#include "core/transport/transport.h"
#include "core/transport/worker_lock.h"

// Returns a UCX failure as an absl::Status from the enclosing function.
#define LEEWAY_RETURN_IF_ERROR_UCS(expr, what)          \
  do {                                                  \
    const ucs_status_t leeway_ucs_ = (expr);            \
    if (leeway_ucs_ != UCS_OK) return UcsToStatus(leeway_ucs_, what); \
  } while (0)

namespace leeway {

// AM ids 0..kAmIdSlots-1 all get a handler, so that ids no kind uses are
// counted and answered instead of being dropped silently by UCX.
constexpr unsigned kAmIdSlots = 32;

// How long a lost peer's requests may stay uncancelled by UCX (UCX 1.13 does
// not always cancel rendezvous sends on force-closed shared-memory
// endpoints) before their tickets complete anyway.
constexpr absl::Duration kOrphanLinger = absl::Seconds(1);

// How long a refused peer's endpoint stays open for the ERROR we sent it.
constexpr absl::Duration kErrorLinger = absl::Milliseconds(500);

class Transport::Impl {
 public:
  Impl(const TransportOptions& options, std::unique_ptr<ProgressLoop> loop);
  ~Impl();

  absl::Status Start();

  // --- API (any thread) ---
  absl::StatusOr<std::string> WorkerAddress();
  absl::StatusOr<uint16_t> Listen(const std::string& host, uint16_t port);
  struct ConnectTarget {
    std::string host;  // empty: use worker_address
    uint16_t port = 0;
    std::string worker_address;
  };
  absl::StatusOr<PeerId> Connect(const ConnectTarget& target, bool handshake);
  void SetPeerLostHandler(PeerLostHandler handler) {
    absl::MutexLock lock(&handlers_mu_);
    peer_lost_handler_ = std::make_shared<PeerLostHandler>(std::move(handler));
  }
  void SetHandler(MessageKind kind, MessageHandler handler,
                  BufferProvider provider);
  // Sends header_bytes (at most kMaxRawHeader; normally an encoded header)
  // as the AM header.
  // `hold` (if any) stays alive until the send is done.
  Ticket Send(PeerId peer, unsigned am_id,
              absl::Span<const uint8_t> header_bytes,
              absl::Span<const uint8_t> payload,
              std::shared_ptr<const void> hold = nullptr);
  Ticket Call(PeerId peer, const WireHeader& header,
              absl::Span<const uint8_t> payload,
              absl::Span<uint8_t> reply_buffer, absl::Time deadline);
  void Reply(PeerId peer, const WireHeader& header,
             absl::Span<const uint8_t> payload);
  absl::StatusOr<std::string> PeerTransportName(PeerId peer);
  int ConnectedPeers();
  TransportStats stats() const;
  const TransportOptions& options() const { return options_; }
  // Waits for `ticket`, driving UCX on this thread while operations flow.
  absl::Status Wait(const Ticket& ticket, absl::Time deadline);

  // Stamps job id and rank into a header.
  WireHeader Stamp(WireHeader header) const;

 private:
  enum class SessionState { kNew, kChallenged, kReady };
  struct Session {
    PeerId id = 0;
    // Our own endpoint to the peer: every send goes through it. Null for a
    // peer that reached us by worker address until its HELLO names its
    // address; we never send on UCX's reply endpoints, which UCX 1.13 may
    // free when a shared-memory peer dies.
    ucp_ep_h ep = nullptr;
    // Endpoints whose incoming messages are this peer's (peer_by_ep_ keys).
    std::vector<ucp_ep_h> receive_keys;
    bool outbound = false;  // we connected
    bool keepalives = true;  // outbound only: probe the peer when quiet
    SessionState state = SessionState::kNew;
    std::string description;
    uint32_t peer_rank = 0;
    Nonce client_nonce{};
    Nonce server_nonce{};
    absl::Time created;
    absl::Time last_heard;
    bool keepalive_in_flight = false;
    // Its endpoint runs over shared memory (known once ready).
    bool shared_memory = false;
    Ticket connect_ticket;  // outbound: completes when the handshake ends
  };
  using CallDone = std::function<void(absl::Status, Message)>;
  struct PendingCall {
    PeerId peer = 0;
    MessageKind kind = MessageKind::kKeepalive;
    absl::Time deadline;
    absl::Span<uint8_t> reply_buffer;
    CallDone done;
    bool send_done = false;
    bool receiving = false;
    bool has_result = false;
    absl::Status result;
    Message reply;
  };
  struct SendContext {
    // Copies at most header.size() bytes.
    void SetHeader(absl::Span<const uint8_t> bytes);
    // Back to a default context for reuse, field by field and only where a
    // field changed, not `*this = SendContext()`: right after an eager send
    // the store buffer is full of the payload's copy into the peer's FIFO,
    // and every store here waits behind it. Frees an owned payload and drops
    // the ticket and hold. A field added below must be reset here.
    void Reset();

    Impl* impl = nullptr;
    PeerId peer = 0;
    uint64_t call_id = 0;  // nonzero when this send is a call's request
    // The AM header; UCX 1.13 reads it until the send completes.
    std::array<uint8_t, 2 * kWireHeaderSize> header{};
    size_t header_length = kWireHeaderSize;
    std::vector<uint8_t> owned;  // payload copy, when the sender lent none
    std::shared_ptr<const void> hold;  // keeps a shared payload alive
    bool has_ticket = false;
    Ticket ticket = Ticket::Succeeded();
    bool in_flight = false;  // in sends_in_flight_
    size_t bytes = 0;
    // Set when the peer is lost: past this time the operation is reported
    // failed even if UCX never cancels the request (see ReleaseOrphans).
    absl::Time orphaned_after = absl::InfiniteFuture();
  };
  struct HandlerEntry {
    MessageHandler handler;
    BufferProvider provider;
  };
  struct RecvContext {
    Impl* impl = nullptr;
    Message message;
    uint64_t call_id = 0;  // nonzero: the reply of this call
    std::shared_ptr<HandlerEntry> handler;
    absl::Time orphaned_after = absl::InfiniteFuture();
  };
  struct AmSlot {
    Impl* impl = nullptr;
    unsigned id = 0;
  };

  // transport.cc
  void OnTick(absl::Time now);
  void OnStop();
  // transport_send.cc
  SendContext* NewSendContext(PeerId peer);
  void ReleaseSendContext(SendContext* ctx);
  // Returns whether the send is still in flight; if not, ctx is released
  // and *finished holds how it ended (also when ctx->peer is gone).
  bool SendToPeer(unsigned am_id, SendContext* ctx,
                  absl::Span<const uint8_t> payload, absl::Status* finished);
  // The same, for a session already looked up.
  bool StartSend(Session* session, unsigned am_id, SendContext* ctx,
                 absl::Span<const uint8_t> payload, absl::Status* finished);
  static void SendCallback(void* request, ucs_status_t status,
                           void* user_data);
  // Finishes the send (its ticket, its call) and releases ctx.
  absl::Status OnSendDone(SendContext* ctx, ucs_status_t status);
  // What a transfer (`what`: "send", "rendezvous receive") with `peer`
  // that UCX ended with `status` returns: UCX cancels the transfers of an
  // endpoint that fails or closes, which to the caller is the peer being
  // unavailable (CANCELLED only while this transport stops).
  absl::Status TransferResult(PeerId peer, ucs_status_t status,
                              const char* what) const;
  // Returns whether the request's send is still in flight (UCX needs
  // progress to finish it; the reply, when it comes, wakes an armed loop).
  bool StartCall(Session* session, const WireHeader& header,
                 std::vector<uint8_t> owned, absl::Span<const uint8_t> lent,
                 absl::Span<uint8_t> reply_buffer, absl::Time deadline,
                 CallDone done);
  void SetCallResult(uint64_t call_id, absl::Status status, Message reply);
  void FinishCallIfReady(uint64_t call_id);
  // Returns whether the send is still in flight.
  bool SendOwned(Session* session, const WireHeader& header,
                 std::vector<uint8_t> payload);
  void SendError(Session* session, const WireHeader* about,
                 const absl::Status& status);

  // transport_receive.cc
  static ucs_status_t AmCallback(void* arg, const void* header,
                                 size_t header_length, void* data,
                                 size_t length,
                                 const ucp_am_recv_param_t* param);
  ucs_status_t OnAm(unsigned am_id, const void* header, size_t header_length,
                    void* data, size_t length,
                    const ucp_am_recv_param_t* param);
  ucs_status_t OnReply(Session* session, const WireHeader& header, void* data,
                       size_t length, bool rndv);
  ucs_status_t OnRequest(Session* session, const WireHeader& header,
                         void* data, size_t length, bool rndv);
  // Receives a rendezvous payload into ctx->message.payload.
  void StartRendezvous(RecvContext* ctx, void* descriptor);
  static void RecvCallback(void* request, ucs_status_t status, size_t length,
                           void* user_data);
  void OnRecvDone(RecvContext* ctx, ucs_status_t status);

  // transport_session.cc
  Session* NewSession(ucp_ep_h ep, bool outbound, std::string description);
  void AddReceiveKey(Session* session, ucp_ep_h ep);
  // The session of an incoming message: a HELLO reply belongs to the peer
  // of its call (and teaches us the endpoint it came by); anything else to
  // the peer its endpoint is known for, or to a new unauthenticated one.
  Session* SessionOf(ucp_ep_h reply_ep, const WireHeader* header);
  absl::StatusOr<ucp_ep_h> CreateEndpointToAddress(const std::string& address);
  Session* FindSession(PeerId peer);
  void StartConnect(const ConnectTarget& target, bool handshake,
                    Ticket ticket);
  // transport_handshake.cc
  void StartHandshake(Session* session, bool by_address);
  void OnChallenge(PeerId peer, absl::Status status, Message reply);
  void OnWelcome(PeerId peer, absl::Status status, Message reply);
  void FailConnect(PeerId peer, const absl::Status& status);
  void OnHelloRequest(Session* session, const WireHeader& header,
                      absl::Span<const uint8_t> payload);
  void CheckSessions(absl::Time now);
  void PeerLost(Session* session, const absl::Status& why);
  // Forgets the peer and closes our endpoint to it; with `linger`, the close
  // waits (at most that long) for sends in flight, so that an ERROR just
  // sent still arrives.
  void Disconnect(Session* session, const std::string& why,
                  absl::Duration linger = absl::ZeroDuration());
  // Closes lingering endpoints whose time came; frees finished closes.
  void PollCloses(absl::Time now);
  // A failed send or receive means UCX may have invalidated the endpoint:
  // forget the peer before anything else uses it.
  void OnTransferError(PeerId peer, const absl::Status& status);
  // Operations with a lost peer whose requests UCX has not cancelled within
  // kOrphanLinger are reported failed; their contexts stay until UCX lets go.
  void ReleaseOrphans(absl::Time now);
  void CloseEndpoint(ucp_ep_h ep);
  static void ConnectionCallback(ucp_conn_request_h request, void* arg);
  static void EndpointErrorCallback(void* arg, ucp_ep_h ep,
                                    ucs_status_t status);
  std::string DescribeLanes(ucp_ep_h ep);
  // The handshake succeeded: the session is ready, its transport noted
  // (shared memory or not) and logged as `how` ("ready", "authenticated").
  void MarkReady(Session* session, const char* how);
  // Whether any ready session runs over shared memory (the stall detector's
  // question: progress_loop.h).
  bool HasSharedMemoryPeers() const;

  // Runs `fn` on the loop thread and waits for its result.
  template <typename T>
  absl::StatusOr<T> RunOnLoop(std::function<absl::StatusOr<T>()> fn);

  const TransportOptions options_;
  std::unique_ptr<ProgressLoop> loop_;
  std::array<AmSlot, kAmIdSlots> am_slots_;

  // Request handlers by message kind, read and written under the worker
  // lock (so a message never sees a half-replaced one). A handler replaced
  // from inside a handler stays alive in retired_handlers_ until the next
  // tick, since it may be the one running.
  std::array<std::shared_ptr<HandlerEntry>, kAmIdSlots> handler_table_;
  std::vector<std::shared_ptr<HandlerEntry>> retired_handlers_;

  absl::Mutex handlers_mu_;
  std::shared_ptr<PeerLostHandler> peer_lost_handler_
      ABSL_GUARDED_BY(handlers_mu_);

  // Worker lock held (progress_loop.h).
  bool stopping_ = false;
  PeerId next_peer_id_ = 1;
  uint64_t next_call_id_ = 1;
  ucp_listener_h listener_ = nullptr;
  absl::flat_hash_map<PeerId, std::unique_ptr<Session>> sessions_;
  absl::flat_hash_map<ucp_ep_h, PeerId> peer_by_ep_;
  absl::flat_hash_map<uint64_t, PendingCall> calls_;
  absl::flat_hash_set<SendContext*> sends_in_flight_;
  std::vector<SendContext*> free_sends_;  // for reuse (transport_send.cc)
  absl::flat_hash_set<RecvContext*> recvs_in_flight_;
  struct Lingering {
    ucp_ep_h ep;
    PeerId peer;
    absl::Time close_by;
  };
  std::vector<Lingering> lingering_;
  std::vector<void*> closing_requests_;

  // Messages and bytes sent and received change only under the worker lock
  // (BumpUnderLock, no locked instruction per message); the rest by
  // fetch_add from anywhere. stats() reads them all from any thread.
  struct Counters {
    std::atomic<uint64_t> messages_sent{0}, messages_received{0},
        bytes_sent{0}, bytes_received{0}, bad_messages{0},
        unauthenticated_messages{0}, handshake_failures{0}, peers_lost{0},
        errors_sent{0}, errors_received{0};
  };
  mutable Counters counters_;
};

template <typename T>
absl::StatusOr<T> Transport::Impl::RunOnLoop(
    std::function<absl::StatusOr<T>()> fn) {
  auto result = std::make_shared<absl::StatusOr<T>>(
      absl::UnavailableError("transport is stopping"));
  Ticket done;
  if (!loop_->Post([fn, result, done]() mutable {
        *result = fn();
        done.Complete(absl::OkStatus());
      })) {
    return absl::UnavailableError("transport is stopped");
  }
  const absl::Status waited = done.Wait(absl::Now() + absl::Seconds(30));
  if (!waited.ok()) return waited;
  return *result;
}

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_TRANSPORT_IMPL_H_
