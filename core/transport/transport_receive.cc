// Transport: incoming active messages. Validation comes first; nothing from
// a peer is used before its header passed DecodeHeader/ValidateFrame and the
// peer passed the handshake.
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/transport/transport_impl.h"

namespace leeway {
namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

}  // namespace

ucs_status_t Transport::Impl::AmCallback(void* arg, const void* header,
                                         size_t header_length, void* data,
                                         size_t length,
                                         const ucp_am_recv_param_t* param) {
  auto* slot = static_cast<AmSlot*>(arg);
  return slot->impl->OnAm(slot->id, header, header_length, data, length,
                          param);
}

ucs_status_t Transport::Impl::OnAm(unsigned am_id, const void* header,
                                   size_t header_length, void* data,
                                   size_t length,
                                   const ucp_am_recv_param_t* param) {
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  // Refusing a rendezvous payload fails the sender's request with this
  // status; eager data is simply dropped.
  const ucs_status_t refuse = rndv ? UCS_ERR_REJECTED : UCS_OK;
  if ((param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) == 0 ||
      param->reply_ep == nullptr) {
    counters_.bad_messages.fetch_add(1, kRelaxed);
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 1)
        << "dropped a message without a reply endpoint (AM id " << am_id
        << ")";
    return refuse;
  }
  const auto header_bytes =
      absl::MakeConstSpan(static_cast<const uint8_t*>(header), header_length);
  const absl::StatusOr<WireHeader> decoded = ValidateIncoming(
      am_id, header_bytes, length, options_.limits, options_.job_id);
  Session* session =
      SessionOf(param->reply_ep, decoded.ok() ? &*decoded : nullptr);
  if (stopping_) return refuse;
  if (!decoded.ok()) {
    counters_.bad_messages.fetch_add(1, kRelaxed);
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 1)
        << "rejected a message from " << session->description << ": "
        << decoded.status();
    // Cold path: decode what we can so that a waiting caller gets the ERROR
    // as the reply to its request.
    const absl::StatusOr<WireHeader> partial =
        DecodeHeader(header_bytes, options_.limits);
    SendError(session, partial.ok() ? &*partial : nullptr, decoded.status());
    if (session->state != SessionState::kReady) {
      Disconnect(session, "invalid message before the handshake", kErrorLinger);
    }
    return refuse;
  }
  const WireHeader& h = *decoded;
  session->last_heard = loop_->CachedNow();
  if (session->state != SessionState::kReady &&
      h.kind != MessageKind::kHello) {
    counters_.unauthenticated_messages.fetch_add(1, kRelaxed);
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 1)
        << "rejected " << MessageKindName(h.kind) << " from "
        << session->description << " before HELLO";
    SendError(session, &h,
              absl::UnauthenticatedError("HELLO must succeed first"));
    Disconnect(session, "message before the handshake", kErrorLinger);
    return refuse;
  }
  BumpUnderLock(counters_.messages_received, 1);
  BumpUnderLock(counters_.bytes_received, length);
  if (session->shared_memory) loop_->NoteSharedMemoryMessage();
  if (h.is_reply()) return OnReply(session, h, data, length, rndv);
  return OnRequest(session, h, data, length, rndv);
}

ucs_status_t Transport::Impl::OnReply(Session* session, const WireHeader& h,
                                      void* data, size_t length, bool rndv) {
  auto it = calls_.find(h.request_id);
  if (it == calls_.end() || it->second.peer != session->id ||
      it->second.has_result) {
    // Late (the call already timed out) or never asked for: drop it.
    LEEWAY_LOG_EVERY_N_SEC(INFO, 5)
        << "dropped an unexpected reply " << h.request_id << " from "
        << session->description;
    return rndv ? UCS_ERR_CANCELED : UCS_OK;
  }
  PendingCall& call = it->second;
  if (h.kind == MessageKind::kError) {
    counters_.errors_received.fetch_add(1, kRelaxed);
    absl::Status remote;
    absl::Status parsed =
        rndv ? absl::InvalidArgumentError("ERROR payload sent by rendezvous")
             : DecodeErrorPayload(
                   absl::MakeConstSpan(static_cast<const uint8_t*>(data),
                                       length),
                   &remote);
    SetCallResult(h.request_id, parsed.ok() ? remote : parsed, Message());
    FinishCallIfReady(h.request_id);
    return rndv ? UCS_ERR_REJECTED : UCS_OK;
  }
  Message reply;
  reply.peer = session->id;
  reply.header = h;
  if (length <= call.reply_buffer.size()) {
    reply.payload = call.reply_buffer.subspan(0, length);
  } else {
    reply.owned.resize(length);
    reply.payload = absl::MakeSpan(reply.owned);
  }
  if (!rndv) {
    if (length > 0) std::memcpy(reply.payload.data(), data, length);
    SetCallResult(h.request_id, absl::OkStatus(), std::move(reply));
    FinishCallIfReady(h.request_id);
    return UCS_OK;
  }
  call.receiving = true;
  auto* ctx = new RecvContext;
  ctx->impl = this;
  ctx->message = std::move(reply);
  ctx->call_id = h.request_id;
  StartRendezvous(ctx, data);
  return UCS_OK;
}

ucs_status_t Transport::Impl::OnRequest(Session* session, const WireHeader& h,
                                        void* data, size_t length, bool rndv) {
  const ucs_status_t refuse = rndv ? UCS_ERR_REJECTED : UCS_OK;
  const auto eager_payload = [&] {
    return absl::MakeConstSpan(static_cast<const uint8_t*>(data),
                               rndv ? 0 : length);
  };
  switch (h.kind) {
    case MessageKind::kHello:
      if (rndv) {
        SendError(session, &h, absl::InvalidArgumentError("oversized HELLO"));
        Disconnect(session, "oversized HELLO", kErrorLinger);
        return refuse;
      }
      OnHelloRequest(session, h, eager_payload());
      return UCS_OK;
    case MessageKind::kKeepalive:
      if (h.expects_reply()) {
        WireHeader pong;
        pong.kind = MessageKind::kKeepalive;
        pong.flags = kFlagReply;
        pong.request_id = h.request_id;
        SendOwned(session, pong, {});
      }
      return refuse;
    case MessageKind::kError: {
      counters_.errors_received.fetch_add(1, kRelaxed);
      absl::Status remote;
      if (!rndv && DecodeErrorPayload(eager_payload(), &remote).ok()) {
        LEEWAY_LOG_EVERY_N_SEC(WARNING, 1)
            << session->description << " reported: " << remote;
      }
      return refuse;
    }
    default:
      break;
  }
  const unsigned slot = static_cast<unsigned>(h.kind);
  HandlerEntry* entry =
      slot < kAmIdSlots ? handler_table_[slot].get() : nullptr;
  if (entry == nullptr) {
    SendError(session, &h,
              absl::UnimplementedError(absl::StrCat(
                  "no handler for ", MessageKindName(h.kind))));
    return refuse;
  }
  Message message;
  message.peer = session->id;
  message.header = h;
  if (entry->provider) {
    absl::StatusOr<absl::Span<uint8_t>> buffer = entry->provider(h);
    if (buffer.ok() && buffer->size() < length) {
      buffer = absl::InvalidArgumentError(absl::StrCat(
          "payload of ", length, " bytes does not fit the ", buffer->size(),
          "-byte destination"));
    }
    if (!buffer.ok()) {
      counters_.bad_messages.fetch_add(1, kRelaxed);
      SendError(session, &h, buffer.status());
      return refuse;
    }
    message.payload = buffer->subspan(0, length);
    if (!rndv && length > 0) std::memcpy(message.payload.data(), data, length);
  } else if (!rndv) {
    // Copied in as the vector is made, not zeroed first and then copied.
    const auto* bytes = static_cast<const uint8_t*>(data);
    message.owned.assign(bytes, bytes + length);
    message.payload = absl::MakeSpan(message.owned);
  } else {
    message.owned.resize(length);
    message.payload = absl::MakeSpan(message.owned);
  }
  if (!rndv) {
    entry->handler(std::move(message));
    return UCS_OK;
  }
  auto* ctx = new RecvContext;
  ctx->impl = this;
  ctx->message = std::move(message);
  ctx->handler = handler_table_[slot];  // outlives a replacement
  StartRendezvous(ctx, data);
  return UCS_OK;
}

void Transport::Impl::StartRendezvous(RecvContext* ctx, void* descriptor) {
  recvs_in_flight_.insert(ctx);
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                       UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  param.cb.recv_am = &Impl::RecvCallback;
  param.user_data = ctx;
  ucs_status_ptr_t request = ucp_am_recv_data_nbx(
      loop_->worker(), descriptor, ctx->message.payload.data(),
      ctx->message.payload.size(), &param);
  if (request == nullptr) {
    OnRecvDone(ctx, UCS_OK);
  } else if (UCS_PTR_IS_ERR(request)) {
    OnRecvDone(ctx, UCS_PTR_STATUS(request));
  }
}

void Transport::Impl::RecvCallback(void* request, ucs_status_t status,
                                   size_t /*length*/, void* user_data) {
  auto* ctx = static_cast<RecvContext*>(user_data);
  ctx->impl->OnRecvDone(ctx, status);
  ucp_request_free(request);
}

void Transport::Impl::OnRecvDone(RecvContext* ctx, ucs_status_t status) {
  recvs_in_flight_.erase(ctx);
  const absl::Status result =
      TransferResult(ctx->message.peer, status, "rendezvous receive");
  if (!result.ok() && status != UCS_ERR_CANCELED) {
    OnTransferError(ctx->message.peer, result);
  }
  if (ctx->call_id != 0) {
    auto it = calls_.find(ctx->call_id);
    if (it != calls_.end()) {
      it->second.receiving = false;
      SetCallResult(ctx->call_id, result, std::move(ctx->message));
      FinishCallIfReady(ctx->call_id);
    }
  } else if (result.ok() && !stopping_) {
    ctx->handler->handler(std::move(ctx->message));
  } else {
    LEEWAY_LOG_EVERY_N_SEC(WARNING, 1)
        << "lost a " << MessageKindName(ctx->message.header.kind)
        << " payload: " << result;
  }
  delete ctx;
}

}  // namespace leeway
