// Transport: sending, request/response calls, and the pool of send
// contexts. See transport.h for the contract.
//
// The hot path is a one-way Send from a thread that finds the worker lock
// free: it sends under the lock on the caller's thread, and when UCX
// finishes the send inside the call (an eager send with room in the FIFO,
// which is how small messages on shared memory go) it returns a ticket
// that needs no allocation, from a context that goes back to the pool.
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/transport/transport_impl.h"

namespace leeway {
namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

// Contexts kept for reuse; more in flight at once are freed when done.
constexpr size_t kPooledSendContexts = 256;

Ticket FailedTicket(absl::Status status) {
  Ticket ticket;
  ticket.Complete(std::move(status));
  return ticket;
}

}  // namespace

// ------------------------------------------------------------ contexts

Transport::Impl::SendContext* Transport::Impl::NewSendContext(PeerId peer) {
  SendContext* ctx;
  if (free_sends_.empty()) {
    ctx = new SendContext;
  } else {
    ctx = free_sends_.back();
    free_sends_.pop_back();
  }
  ctx->impl = this;
  ctx->peer = peer;
  return ctx;
}

void Transport::Impl::ReleaseSendContext(SendContext* ctx) {
  if (free_sends_.size() >= kPooledSendContexts) {
    delete ctx;
    return;
  }
  ctx->Reset();
  free_sends_.push_back(ctx);
}

// ------------------------------------------------------------- sending

Ticket Transport::Impl::Send(PeerId peer, unsigned am_id,
                             absl::Span<const uint8_t> header_bytes,
                             absl::Span<const uint8_t> payload,
                             std::shared_ptr<const void> hold) {
  // Holding the lock, earlier posted work has run (Guard), so this send
  // cannot overtake one this thread posted before.
  ProgressLoop::Guard guard(loop_.get(), ProgressLoop::Guard::kBriefly);
  if (guard.held()) {
    SendContext* ctx = NewSendContext(peer);
    ctx->SetHeader(header_bytes);
    ctx->hold = std::move(hold);
    absl::Status finished;
    if (!SendToPeer(am_id, ctx, payload, &finished)) {
      return finished.ok() ? Ticket::Succeeded()
                           : FailedTicket(std::move(finished));
    }
    // In flight: UCX completes it during progress, under this lock.
    ctx->has_ticket = true;
    ctx->ticket = Ticket();
    guard.WakeOnRelease();
    return ctx->ticket;
  }
  // Another thread holds the worker lock (or this one does, in a handler):
  // the send runs when the lock comes free, in order with posted work.
  auto* ctx = new SendContext;  // the pool is the lock holder's
  ctx->impl = this;
  ctx->peer = peer;
  ctx->SetHeader(header_bytes);
  ctx->hold = std::move(hold);
  ctx->has_ticket = true;
  Ticket ticket = ctx->ticket = Ticket();
  if (!loop_->Post([this, ctx, am_id, payload] {
        absl::Status unused;
        SendToPeer(am_id, ctx, payload, &unused);
      })) {
    ticket.Complete(absl::UnavailableError("transport is stopped"));
    delete ctx;
  }
  return ticket;
}

bool Transport::Impl::SendToPeer(unsigned am_id, SendContext* ctx,
                                 absl::Span<const uint8_t> payload,
                                 absl::Status* finished) {
  Session* session = FindSession(ctx->peer);
  if (stopping_ || session == nullptr) {
    *finished = absl::UnavailableError(
        absl::StrCat("peer ", ctx->peer, " is not connected"));
    if (ctx->has_ticket) ctx->ticket.Complete(*finished);
    ReleaseSendContext(ctx);
    return false;
  }
  return StartSend(session, am_id, ctx, payload, finished);
}

void Transport::Impl::SendContext::SetHeader(absl::Span<const uint8_t> bytes) {
  header_length = std::min(bytes.size(), header.size());
  std::memcpy(header.data(), bytes.data(), header_length);
}

void Transport::Impl::SendContext::Reset() {
  impl = nullptr;
  peer = 0;
  call_id = 0;
  header_length = kWireHeaderSize;
  if (owned.capacity() != 0) std::vector<uint8_t>().swap(owned);
  if (hold != nullptr) hold.reset();
  if (has_ticket) {
    has_ticket = false;
    ticket = Ticket::Succeeded();
  }
  in_flight = false;
  bytes = 0;
  if (orphaned_after != absl::InfiniteFuture()) orphaned_after = absl::InfiniteFuture();
}

bool Transport::Impl::StartSend(Session* session, unsigned am_id,
                                SendContext* ctx,
                                absl::Span<const uint8_t> payload,
                                absl::Status* finished) {
  ctx->bytes = payload.size();
  if (session->ep == nullptr) {
    *finished = OnSendDone(ctx, UCS_ERR_NOT_CONNECTED);
    return false;
  }
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_AM_SEND_FLAG_REPLY;
  param.cb.send = &Impl::SendCallback;
  param.user_data = ctx;
  // Small eager sends may complete inside the call (NULL): then the
  // callback is not invoked and the send finishes here.
  ucs_status_ptr_t request =
      ucp_am_send_nbx(session->ep, am_id, ctx->header.data(), ctx->header_length,
                      payload.data(), payload.size(), &param);
  if (request == nullptr) {
    *finished = OnSendDone(ctx, UCS_OK);
    return false;
  }
  if (UCS_PTR_IS_ERR(request)) {
    *finished = OnSendDone(ctx, UCS_PTR_STATUS(request));
    return false;
  }
  ctx->in_flight = true;
  sends_in_flight_.insert(ctx);
  return true;
}

void Transport::Impl::SendCallback(void* request, ucs_status_t status,
                                   void* user_data) {
  auto* ctx = static_cast<SendContext*>(user_data);
  ctx->impl->OnSendDone(ctx, status).IgnoreError();
  ucp_request_free(request);
}

absl::Status Transport::Impl::TransferResult(PeerId peer, ucs_status_t status,
                                             const char* what) const {
  if (status == UCS_OK) return absl::OkStatus();
  if (status == UCS_ERR_CANCELED && !stopping_) {
    return absl::UnavailableError(absl::StrCat(
        what, " with peer ", peer, " cancelled: its endpoint failed or closed"));
  }
  return UcsToStatus(status, what);
}

absl::Status Transport::Impl::OnSendDone(SendContext* ctx,
                                         ucs_status_t status) {
  if (ctx->in_flight) sends_in_flight_.erase(ctx);
  absl::Status result = TransferResult(ctx->peer, status, "send");
  if (!result.ok() && status != UCS_ERR_CANCELED) {
    OnTransferError(ctx->peer, result);
  }
  if (result.ok()) {
    BumpUnderLock(counters_.messages_sent, 1);
    BumpUnderLock(counters_.bytes_sent, ctx->bytes);
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
  ReleaseSendContext(ctx);
  return result;
}

bool Transport::Impl::SendOwned(Session* session, const WireHeader& header,
                                std::vector<uint8_t> payload) {
  SendContext* ctx = NewSendContext(session->id);
  WireHeader stamped = Stamp(header);
  stamped.payload_bytes = static_cast<uint32_t>(payload.size());
  EncodeHeader(stamped, ctx->header.data());
  ctx->header_length = kWireHeaderSize;
  ctx->owned = std::move(payload);
  absl::Status unused;
  return StartSend(session, static_cast<unsigned>(header.kind), ctx,
                   absl::MakeConstSpan(ctx->owned), &unused);
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
    if (stopping_ || session == nullptr) return false;  // the peer is gone
    return SendOwned(session, header, std::move(copy));
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
          return false;
        }
        return StartCall(session, header, {}, payload, reply_buffer, deadline,
                         [ticket](absl::Status status, Message reply) mutable {
                           ticket.Complete(std::move(status), std::move(reply));
                         });
      })) {
    ticket.Complete(absl::UnavailableError("transport is stopped"));
  }
  return ticket;
}

bool Transport::Impl::StartCall(Session* session, const WireHeader& header,
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

  SendContext* ctx = NewSendContext(session->id);
  ctx->call_id = call_id;
  ctx->owned = std::move(owned);
  const absl::Span<const uint8_t> payload =
      ctx->owned.empty() ? lent : absl::MakeConstSpan(ctx->owned);
  WireHeader stamped = Stamp(header);
  stamped.flags = (header.flags & ~kFlagReply) | kFlagExpectsReply;
  stamped.request_id = call_id;
  stamped.payload_bytes = static_cast<uint32_t>(payload.size());
  EncodeHeader(stamped, ctx->header.data());
  ctx->header_length = kWireHeaderSize;
  absl::Status unused;
  return StartSend(session, static_cast<unsigned>(header.kind), ctx, payload,
                   &unused);
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

}  // namespace leeway
