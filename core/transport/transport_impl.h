// Internal: the state behind Transport. Everything here runs on the progress
// thread (progress_loop.h) unless a method says otherwise; that is what
// makes the maps below safe without locks. Split across transport.cc (API,
// sending, calls, shutdown), transport_receive.cc (incoming messages) and
// transport_session.cc (connections, handshake, keepalive, peer loss).
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
  void SetHandler(MessageKind kind, MessageHandler handler,
                  BufferProvider provider);
  // Sends header_bytes (at most kMaxRawHeader; normally an encoded header)
  // as the AM header.
  Ticket Send(PeerId peer, unsigned am_id,
              absl::Span<const uint8_t> header_bytes,
              absl::Span<const uint8_t> payload);
  Ticket Call(PeerId peer, const WireHeader& header,
              absl::Span<const uint8_t> payload,
              absl::Span<uint8_t> reply_buffer, absl::Time deadline);
  void Reply(PeerId peer, const WireHeader& header,
             absl::Span<const uint8_t> payload);
  absl::StatusOr<std::string> PeerTransportName(PeerId peer);
  int ConnectedPeers();
  TransportStats stats() const;
  const TransportOptions& options() const { return options_; }

  // Stamps job id and rank into a header.
  WireHeader Stamp(WireHeader header) const;

 private:
  enum class SessionState { kNew, kChallenged, kReady };
  struct Session {
    PeerId id = 0;
    ucp_ep_h ep = nullptr;
    bool owns_ep = false;  // we created it (connect or listener accept)
    bool outbound = false;  // we connected; we send keepalives
    SessionState state = SessionState::kNew;
    std::string description;
    uint32_t peer_rank = 0;
    Nonce client_nonce{};
    Nonce server_nonce{};
    absl::Time created;
    absl::Time last_heard;
    bool keepalive_in_flight = false;
    Ticket connect_ticket;  // outbound: completes when the handshake ends
  };
  using CallDone = std::function<void(absl::Status, Message)>;
  struct PendingCall {
    PeerId peer = 0;
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
    Impl* impl = nullptr;
    PeerId peer = 0;
    uint64_t call_id = 0;  // nonzero when this send is a call's request
    std::array<uint8_t, 2 * kWireHeaderSize> header{};
    size_t header_length = kWireHeaderSize;
    std::vector<uint8_t> owned;  // payload copy, when the sender lent none
    bool has_ticket = false;
    Ticket ticket;
    size_t bytes = 0;
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
  };
  struct AmSlot {
    Impl* impl = nullptr;
    unsigned id = 0;
  };

  // transport.cc
  void OnTick(absl::Time now);
  void OnStop();
  void StartSend(Session* session, unsigned am_id, SendContext* ctx,
                 absl::Span<const uint8_t> payload);
  static void SendCallback(void* request, ucs_status_t status,
                           void* user_data);
  void OnSendDone(SendContext* ctx, ucs_status_t status);
  void StartCall(Session* session, const WireHeader& header,
                 std::vector<uint8_t> owned, absl::Span<const uint8_t> lent,
                 absl::Span<uint8_t> reply_buffer, absl::Time deadline,
                 CallDone done);
  void SetCallResult(uint64_t call_id, absl::Status status, Message reply);
  void FinishCallIfReady(uint64_t call_id);
  void SendOwned(Session* session, const WireHeader& header,
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
  Session* NewSession(ucp_ep_h ep, bool owns_ep, bool outbound,
                      std::string description);
  Session* FindSession(PeerId peer);
  Session* SessionForEp(ucp_ep_h ep);
  void StartConnect(const ConnectTarget& target, bool handshake,
                    Ticket ticket);
  void OnChallenge(PeerId peer, absl::Status status, Message reply);
  void OnWelcome(PeerId peer, absl::Status status, Message reply);
  void FailConnect(PeerId peer, const absl::Status& status);
  void OnHelloRequest(Session* session, const WireHeader& header,
                      absl::Span<const uint8_t> payload);
  void CheckSessions(absl::Time now);
  void PeerLost(Session* session, const absl::Status& why);
  void Disconnect(Session* session, const std::string& why);
  void CloseEndpoint(ucp_ep_h ep);
  static void ConnectionCallback(ucp_conn_request_h request, void* arg);
  static void EndpointErrorCallback(void* arg, ucp_ep_h ep,
                                    ucs_status_t status);
  std::string DescribeLanes(ucp_ep_h ep);

  // Runs `fn` on the loop thread and waits for its result.
  template <typename T>
  absl::StatusOr<T> RunOnLoop(std::function<absl::StatusOr<T>()> fn);

  const TransportOptions options_;
  std::unique_ptr<ProgressLoop> loop_;
  std::array<AmSlot, kAmIdSlots> am_slots_;

  absl::Mutex handlers_mu_;
  absl::flat_hash_map<int, std::shared_ptr<HandlerEntry>> handlers_
      ABSL_GUARDED_BY(handlers_mu_);

  // Loop thread only.
  bool stopping_ = false;
  PeerId next_peer_id_ = 1;
  uint64_t next_call_id_ = 1;
  ucp_listener_h listener_ = nullptr;
  absl::flat_hash_map<PeerId, std::unique_ptr<Session>> sessions_;
  absl::flat_hash_map<ucp_ep_h, PeerId> peer_by_ep_;
  absl::flat_hash_map<uint64_t, PendingCall> calls_;
  absl::flat_hash_set<SendContext*> sends_in_flight_;
  absl::flat_hash_set<RecvContext*> recvs_in_flight_;
  int closing_endpoints_ = 0;

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
