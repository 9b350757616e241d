// Transport: the public API, sending, request/response calls, ticks and
// shutdown. See transport.h for the contract.
#include "core/transport/transport.h"

#include <algorithm>
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
  // Twice the keepalive interval (a quarter of the peer timeout): a live
  // shared-memory peer is heard within it.
  loop_options.stall_window = std::max(absl::Seconds(1), options.peer_timeout / 2);
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
                              absl::Span<const uint8_t> payload,
                              std::shared_ptr<const void> hold) {
  header = impl_->Stamp(header);
  header.payload_bytes = static_cast<uint32_t>(payload.size());
  uint8_t bytes[kWireHeaderSize];
  EncodeHeader(header, bytes);
  return impl_->Send(peer, static_cast<unsigned>(header.kind), bytes,
                     payload, std::move(hold));
}
Ticket Transport::ReplyFrom(const Message& request, const WireHeader& header,
                            absl::Span<const uint8_t> payload) {
  WireHeader reply = header;
  reply.flags = kFlagReply;
  reply.request_id = request.header.request_id;
  return SendStamped(request.peer, reply, payload);
}
Ticket Transport::ReplyShared(const Message& request, const WireHeader& header,
                              std::shared_ptr<const std::vector<uint8_t>> payload) {
  WireHeader reply = header;
  reply.flags = kFlagReply;
  reply.request_id = request.header.request_id;
  const absl::Span<const uint8_t> bytes =
      payload ? absl::MakeConstSpan(*payload) : absl::Span<const uint8_t>();
  return SendStamped(request.peer, reply, bytes, std::move(payload));
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
  for (SendContext* ctx : free_sends_) delete ctx;
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
  loop_->Start([this](absl::Time now) { OnTick(now); }, [this] { OnStop(); },
               [this] { return HasSharedMemoryPeers(); });
  return absl::OkStatus();
}

WireHeader Transport::Impl::Stamp(WireHeader header) const {
  header.job_id = options_.job_id;
  header.sender_rank = options_.rank;
  return header;
}

void Transport::Impl::SetHandler(MessageKind kind, MessageHandler handler,
                                 BufferProvider provider) {
  std::shared_ptr<HandlerEntry> entry;
  if (handler) {
    entry = std::make_shared<HandlerEntry>();
    entry->handler = std::move(handler);
    entry->provider = std::move(provider);
  }
  const unsigned slot = static_cast<unsigned>(kind);
  if (slot >= kAmIdSlots) return;  // no such message can arrive
  // Once this returns, no message of `kind` runs the old handler.
  ProgressLoop::Guard guard(loop_.get(), ProgressLoop::Guard::kWait);
  if (!guard.held()) {
    // Called from a handler (this thread holds the lock): the old handler
    // may be the one running; keep it until the next tick.
    retired_handlers_.push_back(std::move(handler_table_[slot]));
  }
  handler_table_[slot] = std::move(entry);
}

absl::Status Transport::Impl::Wait(const Ticket& ticket, absl::Time deadline) {
  // Drive UCX here while operations keep completing (no hand-over, no
  // context switch); once nothing has happened for the loop's spin (at most
  // `busy_poll`, none where polling has not been catching events:
  // progress_loop.h), or another thread drives, sleep on the ticket and let
  // the progress thread work.
  const absl::Duration spin = loop_->spin();
  absl::Time last_event = absl::InfinitePast();
  while (!ticket.done()) {
    bool busy = false;
    absl::Time now;
    if (!loop_->TryDrive(&busy, &now)) break;
    if (now >= deadline || (!busy && spin == absl::ZeroDuration())) break;
    if (busy || last_event == absl::InfinitePast()) {
      last_event = now;
    } else if (now - last_event > spin) {
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
  s.stalls = loop_->stalls();
  return s;
}

// ------------------------------------------------------ ticks and stop

void Transport::Impl::OnTick(absl::Time now) {
  retired_handlers_.clear();
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
