// Transport: the public API, sending, request/response calls, ticks and
// shutdown. See transport.h for the contract.
#include "core/transport/transport.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/transport/transport_impl.h"

namespace leeway {
namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

}  // namespace

// ---------------------------------------------------------------- Transport

absl::StatusOr<std::unique_ptr<Transport>> Transport::Create(
    const TransportOptions& options) {
  if (options.token.empty()) {
    return absl::InvalidArgumentError("the cluster token must not be empty");
  }
  ProgressLoop::Options loop_options;
  loop_options.busy_poll = options.busy_poll;
  LEEWAY_ASSIGN_OR_RETURN(auto loop, ProgressLoop::Create(loop_options));
  auto impl = std::make_unique<Impl>(options, std::move(loop));
  LEEWAY_RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<Transport>(new Transport(std::move(impl)));
}

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Transport::~Transport() = default;

absl::StatusOr<std::string> Transport::WorkerAddress() {
  return impl_->WorkerAddress();
}
absl::StatusOr<uint16_t> Transport::Listen(const std::string& host,
                                           uint16_t port) {
  return impl_->Listen(host, port);
}
absl::StatusOr<PeerId> Transport::Connect(const std::string& host,
                                          uint16_t port) {
  return impl_->Connect({host, port, ""}, /*handshake=*/true);
}
absl::StatusOr<PeerId> Transport::ConnectToWorkerAddress(
    const std::string& address) {
  return impl_->Connect({"", 0, address}, /*handshake=*/true);
}
absl::StatusOr<PeerId> Transport::ConnectWithoutHandshakeForTesting(
    const std::string& host, uint16_t port) {
  return impl_->Connect({host, port, ""}, /*handshake=*/false);
}
absl::StatusOr<PeerId>
Transport::ConnectToWorkerAddressWithoutHandshakeForTesting(
    const std::string& address) {
  return impl_->Connect({"", 0, address}, /*handshake=*/false);
}
void Transport::SetHandler(MessageKind kind, MessageHandler handler,
                           BufferProvider provider) {
  impl_->SetHandler(kind, std::move(handler), std::move(provider));
}
void Transport::SetPeerLostHandler(PeerLostHandler handler) {
  impl_->SetPeerLostHandler(std::move(handler));
}
Ticket Transport::Send(PeerId peer, const WireHeader& header,
                       absl::Span<const uint8_t> payload) {
  return SendStamped(peer, header, payload);
}
Ticket Transport::SendStamped(PeerId peer, WireHeader header,
                              absl::Span<const uint8_t> payload) {
  header = impl_->Stamp(header);
  header.payload_bytes = static_cast<uint32_t>(payload.size());
  uint8_t bytes[kWireHeaderSize];
  EncodeHeader(header, bytes);
  return impl_->Send(peer, static_cast<unsigned>(header.kind), bytes,
                     payload);
}
Ticket Transport::ReplyFrom(const Message& request, const WireHeader& header,
                            absl::Span<const uint8_t> payload) {
  WireHeader reply = header;
  reply.flags = kFlagReply;
  reply.request_id = request.header.request_id;
  return SendStamped(request.peer, reply, payload);
}
Ticket Transport::Call(PeerId peer, const WireHeader& header,
                       absl::Span<const uint8_t> payload,
                       absl::Span<uint8_t> reply_buffer, absl::Time deadline) {
  return impl_->Call(peer, header, payload, reply_buffer, deadline);
}
void Transport::Reply(const Message& request, const WireHeader& header,
                      absl::Span<const uint8_t> payload) {
  WireHeader reply = header;
  reply.flags = kFlagReply;
  reply.request_id = request.header.request_id;
  impl_->Reply(request.peer, reply, payload);
}
void Transport::ReplyError(const Message& request,
                           const absl::Status& status) {
  WireHeader reply;
  reply.kind = MessageKind::kError;
  reply.flags = request.header.expects_reply() ? kFlagReply : 0;
  reply.request_id = request.header.request_id;
  reply.layer = request.header.layer;
  reply.chunk = request.header.chunk;
  const std::string payload = EncodeErrorPayload(status);
  impl_->Reply(request.peer, reply,
               absl::MakeConstSpan(
                   reinterpret_cast<const uint8_t*>(payload.data()),
                   payload.size()));
}
absl::Status Transport::Wait(const Ticket& ticket, absl::Time deadline) {
  return impl_->Wait(ticket, deadline);
}
Ticket Transport::SendRawForTesting(PeerId peer, unsigned am_id,
                                    absl::Span<const uint8_t> header_bytes,
                                    absl::Span<const uint8_t> payload) {
  return impl_->Send(peer, am_id, header_bytes, payload);
}
absl::StatusOr<std::string> Transport::PeerTransportName(PeerId peer) {
  return impl_->PeerTransportName(peer);
}
int Transport::ConnectedPeers() { return impl_->ConnectedPeers(); }
TransportStats Transport::stats() const { return impl_->stats(); }
const TransportOptions& Transport::options() const {
  return impl_->options();
}

// ----------------------------------------------------------------- Impl

Transport::Impl::Impl(const TransportOptions& options,
                      std::unique_ptr<ProgressLoop> loop)
    : options_(options), loop_(std::move(loop)) {}

Transport::Impl::~Impl() {
  loop_->Stop();  // runs OnStop on the loop thread
  loop_.reset();  // destroys the UCP worker: UCX holds no buffer after this
  for (SendContext* ctx : sends_in_flight_) {
    if (ctx->has_ticket) {
      ctx->ticket.Complete(absl::CancelledError("transport shut down"));
    }
    delete ctx;
  }
  for (RecvContext* ctx : recvs_in_flight_) delete ctx;
  for (auto& entry : calls_) {
    entry.second.done(absl::CancelledError("transport shut down"), Message());
  }
}

absl::Status Transport::Impl::Start() {
  for (unsigned id = 0; id < kAmIdSlots; ++id) {
    am_slots_[id] = AmSlot{this, id};
    ucp_am_handler_param_t param;
    std::memset(&param, 0, sizeof(param));
    param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                       UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                       UCP_AM_HANDLER_PARAM_FIELD_CB |
                       UCP_AM_HANDLER_PARAM_FIELD_ARG;
    param.id = id;
    param.flags = UCP_AM_FLAG_WHOLE_MSG;
    param.cb = &Impl::AmCallback;
    param.arg = &am_slots_[id];
    LEEWAY_RETURN_IF_ERROR(UcsToStatus(
        ucp_worker_set_am_recv_handler(loop_->worker(), &param),
        "ucp_worker_set_am_recv_handler"));
  }
  loop_->Start([this](absl::Time now) { OnTick(now); },
               [this] { OnStop(); });
  return absl::OkStatus();
}

WireHeader Transport::Impl::Stamp(WireHeader header) const {
  header.job_id = options_.job_id;
  header.sender_rank = options_.rank;
  return header;
}

void Transport::Impl::SetHandler(MessageKind kind, MessageHandler handler,
                                 BufferProvider provider) {
  auto entry = std::make_shared<HandlerEntry>();
  entry->handler = std::move(handler);
  entry->provider = std::move(provider);
  absl::MutexLock lock(&handlers_mu_);
  handlers_[static_cast<int>(kind)] = std::move(entry);
}

absl::Status Transport::Impl::Wait(const Ticket& ticket, absl::Time deadline) {
  // Drive UCX here while operations keep completing (no hand-over, no
  // context switch); once nothing has happened for `busy_poll`, or another
  // thread drives, sleep on the ticket and let the progress thread work.
  absl::Time last_event = absl::InfinitePast();
  while (!ticket.done()) {
    bool busy = false;
    if (!loop_->TryDrive(&busy)) break;
    const absl::Time now = loop_->CachedNow();
    if (now >= deadline) break;
    if (busy || last_event == absl::InfinitePast()) {
      last_event = now;
    } else if (now - last_event > options_.busy_poll) {
      break;
    }
  }
  if (!ticket.done()) loop_->HandBack();
  return ticket.Wait(deadline);
}

TransportStats Transport::Impl::stats() const {
  TransportStats s;
  s.messages_sent = counters_.messages_sent.load(kRelaxed);
  s.messages_received = counters_.messages_received.load(kRelaxed);
  s.bytes_sent = counters_.bytes_sent.load(kRelaxed);
  s.bytes_received = counters_.bytes_received.load(kRelaxed);
  s.bad_messages = counters_.bad_messages.load(kRelaxed);
  s.unauthenticated_messages =
      counters_.unauthenticated_messages.load(kRelaxed);
  s.handshake_failures = counters_.handshake_failures.load(kRelaxed);
  s.peers_lost = counters_.peers_lost.load(kRelaxed);
  s.errors_sent = counters_.errors_sent.load(kRelaxed);
  s.errors_received = counters_.errors_received.load(kRelaxed);
  return s;
}

// ------------------------------------------------------------- sending

Ticket Transport::Impl::Send(PeerId peer, unsigned am_id,
                             absl::Span<const uint8_t> header_bytes,
                             absl::Span<const uint8_t> payload) {
  auto* ctx = new SendContext;
  ctx->impl = this;
  ctx->peer = peer;
  ctx->has_ticket = true;
  ctx->header_length = std::min(header_bytes.size(), ctx->header.size());
  std::memcpy(ctx->header.data(), header_bytes.data(), ctx->header_length);
  Ticket ticket = ctx->ticket;
  if (!loop_->RunOrPost([this, ctx, am_id, payload] {
        Session* session = FindSession(ctx->peer);
        if (stopping_ || session == nullptr) {
          ctx->ticket.Complete(absl::UnavailableError(
              absl::StrCat("peer ", ctx->peer, " is not connected")));
          delete ctx;
          return;
        }
        StartSend(session, am_id, ctx, payload);
      })) {
    ticket.Complete(absl::UnavailableError("transport is stopped"));
    delete ctx;
  }
  return ticket;
}

void Transport::Impl::StartSend(Session* session, unsigned am_id,
                                SendContext* ctx,
                                absl::Span<const uint8_t> payload) {
  ctx->bytes = payload.size();
  sends_in_flight_.insert(ctx);
  if (session->ep == nullptr) {
    OnSendDone(ctx, UCS_ERR_NOT_CONNECTED);
    return;
  }
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  // Small eager sends may complete inside the call (NULL): then the
  // callback is not invoked and we finish the send here.
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  param.cb.send = &Impl::SendCallback;
  param.user_data = ctx;
  ucs_status_ptr_t request =
      ucp_am_send_nbx(session->ep, am_id, ctx->header.data(), ctx->header_length,
                      payload.data(), payload.size(), &param);
  if (request == nullptr) {
    OnSendDone(ctx, UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    OnSendDone(ctx, UCS_PTR_STATUS(request));
  }
}

void Transport::Impl::SendCallback(void* request, ucs_status_t status,
                                   void* user_data) {
  auto* ctx = static_cast<SendContext*>(user_data);
  ctx->impl->OnSendDone(ctx, status);
  ucp_request_free(request);
}

void Transport::Impl::OnSendDone(SendContext* ctx, ucs_status_t status) {
  sends_in_flight_.erase(ctx);
  const absl::Status result = UcsToStatus(status, "send");
  if (!result.ok() && status != UCS_ERR_CANCELED) {
    OnTransferError(ctx->peer, result);
  }
  if (result.ok()) {
    counters_.messages_sent.fetch_add(1, kRelaxed);
    counters_.bytes_sent.fetch_add(ctx->bytes, kRelaxed);
  }
  if (ctx->call_id != 0) {
    auto it = calls_.find(ctx->call_id);
    if (it != calls_.end()) {
      it->second.send_done = true;
      if (!result.ok()) SetCallResult(ctx->call_id, result, Message());
      FinishCallIfReady(ctx->call_id);
    }
  }
  if (ctx->has_ticket) ctx->ticket.Complete(result);
  delete ctx;
}

void Transport::Impl::SendOwned(Session* session, const WireHeader& header,
                                std::vector<uint8_t> payload) {
  auto* ctx = new SendContext;
  ctx->impl = this;
  ctx->peer = session->id;
  WireHeader stamped = Stamp(header);
  stamped.payload_bytes = static_cast<uint32_t>(payload.size());
  EncodeHeader(stamped, ctx->header.data());
  ctx->owned = std::move(payload);
  StartSend(session, static_cast<unsigned>(header.kind), ctx,
            absl::MakeConstSpan(ctx->owned));
}

void Transport::Impl::SendError(Session* session, const WireHeader* about,
                                const absl::Status& status) {
  if (session->ep == nullptr) return;  // nowhere safe to send it
  WireHeader header;
  header.kind = MessageKind::kError;
  if (about != nullptr && about->expects_reply()) {
    header.flags = kFlagReply;
    header.request_id = about->request_id;
  }
  const std::string payload = EncodeErrorPayload(status);
  counters_.errors_sent.fetch_add(1, kRelaxed);
  SendOwned(session, header,
            std::vector<uint8_t>(payload.begin(), payload.end()));
}

void Transport::Impl::Reply(PeerId peer, const WireHeader& header,
                            absl::Span<const uint8_t> payload) {
  std::vector<uint8_t> copy(payload.begin(), payload.end());
  loop_->RunOrPost([this, peer, header, copy = std::move(copy)]() mutable {
    Session* session = FindSession(peer);
    if (stopping_ || session == nullptr) return;  // the peer is gone
    SendOwned(session, header, std::move(copy));
  });
}

// --------------------------------------------------------------- calls

Ticket Transport::Impl::Call(PeerId peer, const WireHeader& header,
                             absl::Span<const uint8_t> payload,
                             absl::Span<uint8_t> reply_buffer,
                             absl::Time deadline) {
  Ticket ticket;
  if (!loop_->RunOrPost([=]() mutable {
        Session* session = FindSession(peer);
        if (stopping_ || session == nullptr ||
            session->state != SessionState::kReady) {
          ticket.Complete(absl::UnavailableError(
              absl::StrCat("peer ", peer, " is not connected")));
          return;
        }
        StartCall(session, header, {}, payload, reply_buffer, deadline,
                  [ticket](absl::Status status, Message reply) mutable {
                    ticket.Complete(std::move(status), std::move(reply));
                  });
      })) {
    ticket.Complete(absl::UnavailableError("transport is stopped"));
  }
  return ticket;
}

void Transport::Impl::StartCall(Session* session, const WireHeader& header,
                                std::vector<uint8_t> owned,
                                absl::Span<const uint8_t> lent,
                                absl::Span<uint8_t> reply_buffer,
                                absl::Time deadline, CallDone done) {
  const uint64_t call_id = next_call_id_++;
  PendingCall& call = calls_[call_id];
  call.peer = session->id;
  call.kind = header.kind;
  call.deadline = deadline;
  call.reply_buffer = reply_buffer;
  call.done = std::move(done);

  auto* ctx = new SendContext;
  ctx->impl = this;
  ctx->peer = session->id;
  ctx->call_id = call_id;
  ctx->owned = std::move(owned);
  const absl::Span<const uint8_t> payload =
      ctx->owned.empty() ? lent : absl::MakeConstSpan(ctx->owned);
  WireHeader stamped = Stamp(header);
  stamped.flags = (header.flags & ~kFlagReply) | kFlagExpectsReply;
  stamped.request_id = call_id;
  stamped.payload_bytes = static_cast<uint32_t>(payload.size());
  EncodeHeader(stamped, ctx->header.data());
  StartSend(session, static_cast<unsigned>(header.kind), ctx, payload);
}

void Transport::Impl::SetCallResult(uint64_t call_id, absl::Status status,
                                    Message reply) {
  auto it = calls_.find(call_id);
  if (it == calls_.end() || it->second.has_result) return;
  it->second.has_result = true;
  it->second.result = std::move(status);
  it->second.reply = std::move(reply);
}

void Transport::Impl::FinishCallIfReady(uint64_t call_id) {
  auto it = calls_.find(call_id);
  if (it == calls_.end()) return;
  PendingCall& call = it->second;
  // Complete only once UCX no longer touches the caller's buffers.
  if (!call.has_result || !call.send_done || call.receiving) return;
  CallDone done = std::move(call.done);
  absl::Status result = std::move(call.result);
  Message reply = std::move(call.reply);
  calls_.erase(it);
  done(std::move(result), std::move(reply));
}

// ------------------------------------------------------ ticks and stop

void Transport::Impl::OnTick(absl::Time now) {
  std::vector<uint64_t> expired;
  for (auto& entry : calls_) {
    if (!entry.second.has_result && now >= entry.second.deadline) {
      expired.push_back(entry.first);
    }
  }
  for (uint64_t id : expired) {
    SetCallResult(id, absl::DeadlineExceededError(absl::StrCat(
                          "no reply from peer ", calls_[id].peer,
                          " before the deadline")),
                  Message());
    FinishCallIfReady(id);
  }
  CheckSessions(now);
  ReleaseOrphans(now);
  PollCloses(now);
}

void Transport::Impl::ReleaseOrphans(absl::Time now) {
  std::vector<uint64_t> calls;
  for (SendContext* ctx : sends_in_flight_) {
    if (now < ctx->orphaned_after) continue;
    if (ctx->has_ticket) {
      ctx->ticket.Complete(absl::UnavailableError(
          absl::StrCat("peer ", ctx->peer, " lost during the send")));
    }
    if (ctx->call_id != 0) calls.push_back(ctx->call_id);
    ctx->call_id = 0;
    ctx->orphaned_after = absl::InfiniteFuture();
  }
  for (uint64_t id : calls) {
    auto it = calls_.find(id);
    if (it != calls_.end()) it->second.send_done = true;
  }
  for (RecvContext* ctx : recvs_in_flight_) {
    if (now < ctx->orphaned_after || ctx->call_id == 0) continue;
    auto it = calls_.find(ctx->call_id);
    if (it != calls_.end()) it->second.receiving = false;
    calls.push_back(ctx->call_id);
    ctx->call_id = 0;
    ctx->orphaned_after = absl::InfiniteFuture();
  }
  for (uint64_t id : calls) FinishCallIfReady(id);
}

void Transport::Impl::OnStop() {
  stopping_ = true;
  if (listener_ != nullptr) {
    ucp_listener_destroy(listener_);
    listener_ = nullptr;
  }
  std::vector<Session*> all;
  for (auto& entry : sessions_) all.push_back(entry.second.get());
  for (Session* session : all) Disconnect(session, "transport shutting down");
  // Closing endpoints cancels their requests; give UCX a bounded moment.
  PollCloses(absl::InfiniteFuture());  // close lingering endpoints now
  loop_->ProgressUntil(
      [this] {
        PollCloses(absl::Now());
        return closing_requests_.empty();
      },
      absl::Seconds(1));
  std::vector<uint64_t> ids;
  for (auto& entry : calls_) ids.push_back(entry.first);
  for (uint64_t id : ids) {
    SetCallResult(id, absl::CancelledError("transport shut down"), Message());
    FinishCallIfReady(id);
  }
}

}  // namespace leeway
