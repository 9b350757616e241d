// Transport: the HELLO handshake (hello.h) on both sides: the client's
// stages 1 and 3 as calls, the server's answers to them.
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/transport/transport_impl.h"

namespace leeway {
namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

std::vector<uint8_t> HelloBytes(const HelloPayload& hello) {
  const std::string bytes = EncodeHello(hello);
  return std::vector<uint8_t>(bytes.begin(), bytes.end());
}

}  // namespace

void Transport::Impl::StartHandshake(Session* session, bool by_address) {
  absl::StatusOr<Nonce> nonce = RandomNonce();
  if (!nonce.ok()) {
    FailConnect(session->id, nonce.status());
    return;
  }
  session->client_nonce = *nonce;
  HelloPayload hello;
  hello.stage = HelloStage::kClientHello;
  hello.nonce = *nonce;
  if (by_address) {
    // The server will reply over an endpoint of its own to this address.
    ucp_address_t* address = nullptr;
    size_t length = 0;
    if (ucp_worker_get_address(loop_->worker(), &address, &length) != UCS_OK) {
      FailConnect(session->id,
                  absl::InternalError("cannot read this worker's address"));
      return;
    }
    hello.address.assign(reinterpret_cast<const char*>(address), length);
    ucp_worker_release_address(loop_->worker(), address);
  }
  WireHeader header;
  header.kind = MessageKind::kHello;
  const PeerId id = session->id;
  StartCall(session, header, HelloBytes(hello), {}, {},
            session->created + options_.handshake_timeout,
            [this, id](absl::Status status, Message reply) {
              OnChallenge(id, std::move(status), std::move(reply));
            });
}

void Transport::Impl::OnChallenge(PeerId peer, absl::Status status,
                                  Message reply) {
  Session* session = FindSession(peer);
  if (session == nullptr) return;
  absl::StatusOr<HelloPayload> hello =
      status.ok() ? DecodeHello(reply.payload) : status;
  if (hello.ok() && hello->stage != HelloStage::kChallenge) {
    hello = absl::UnauthenticatedError("expected a HELLO challenge");
  }
  if (hello.ok() &&
      !MacEqual(hello->mac, ServerProof(options_.token, options_.job_id,
                                        session->client_nonce, hello->nonce))) {
    hello = absl::UnauthenticatedError(
        "the server failed to prove it holds the cluster token");
  }
  if (!hello.ok()) {
    FailConnect(peer, hello.status());
    return;
  }
  session->server_nonce = hello->nonce;
  HelloPayload response;
  response.stage = HelloStage::kResponse;
  response.mac = ClientProof(options_.token, options_.job_id,
                             session->server_nonce, session->client_nonce);
  WireHeader header;
  header.kind = MessageKind::kHello;
  StartCall(session, header, HelloBytes(response), {}, {},
            session->created + options_.handshake_timeout,
            [this, peer](absl::Status status, Message reply) {
              OnWelcome(peer, std::move(status), std::move(reply));
            });
}

void Transport::Impl::OnWelcome(PeerId peer, absl::Status status,
                                Message reply) {
  Session* session = FindSession(peer);
  if (session == nullptr) return;
  absl::StatusOr<HelloPayload> hello =
      status.ok() ? DecodeHello(reply.payload) : status;
  if (hello.ok() && hello->stage != HelloStage::kWelcome) {
    hello = absl::UnauthenticatedError("expected a HELLO welcome");
  }
  if (!hello.ok()) {
    FailConnect(peer, hello.status());
    return;
  }
  session->peer_rank = reply.header.sender_rank;
  MarkReady(session, "ready");
  Message result;
  result.peer = peer;
  session->connect_ticket.Complete(absl::OkStatus(), std::move(result));
}

void Transport::Impl::FailConnect(PeerId peer, const absl::Status& status) {
  Session* session = FindSession(peer);
  if (session == nullptr) return;
  counters_.handshake_failures.fetch_add(1, kRelaxed);
  Ticket ticket = session->connect_ticket;
  Disconnect(session, absl::StrCat("handshake failed: ", status.ToString()));
  ticket.Complete(absl::Status(
      status.code(), absl::StrCat("handshake failed: ", status.message())));
}

void Transport::Impl::OnHelloRequest(Session* session, const WireHeader& h,
                                     absl::Span<const uint8_t> payload) {
  absl::StatusOr<HelloPayload> hello = DecodeHello(payload);
  absl::Status failure = hello.status();
  if (failure.ok() && !h.expects_reply()) {
    failure = absl::InvalidArgumentError("HELLO must expect a reply");
  }
  HelloPayload answer;
  if (failure.ok() && hello->stage == HelloStage::kClientHello &&
      session->state == SessionState::kNew && session->ep == nullptr) {
    if (hello->address.empty()) {
      failure = absl::InvalidArgumentError(
          "a HELLO by worker address must carry the client's address");
    } else {
      absl::StatusOr<ucp_ep_h> ep = CreateEndpointToAddress(hello->address);
      if (ep.ok()) {
        session->ep = *ep;
        AddReceiveKey(session, *ep);
      } else {
        failure = ep.status();
      }
    }
  }
  if (failure.ok() && hello->stage == HelloStage::kClientHello &&
      session->state == SessionState::kNew) {
    absl::StatusOr<Nonce> nonce = RandomNonce();
    if (nonce.ok()) {
      session->client_nonce = hello->nonce;
      session->server_nonce = *nonce;
      session->peer_rank = h.sender_rank;
      session->state = SessionState::kChallenged;
      answer.stage = HelloStage::kChallenge;
      answer.nonce = *nonce;
      answer.mac = ServerProof(options_.token, options_.job_id,
                               session->client_nonce, session->server_nonce);
    } else {
      failure = nonce.status();
    }
  } else if (failure.ok() && hello->stage == HelloStage::kResponse &&
             session->state == SessionState::kChallenged) {
    if (MacEqual(hello->mac,
                 ClientProof(options_.token, options_.job_id,
                             session->server_nonce, session->client_nonce))) {
      answer.stage = HelloStage::kWelcome;
      MarkReady(session, "authenticated");
    } else {
      failure = absl::UnauthenticatedError(
          "HELLO proof does not match the cluster token");
    }
  } else if (failure.ok()) {
    failure = absl::FailedPreconditionError("HELLO out of order");
  }
  if (!failure.ok()) {
    counters_.handshake_failures.fetch_add(1, kRelaxed);
    LEEWAY_LOG(WARNING) << "handshake with " << session->description
                        << " failed: " << failure;
    SendError(session, &h, failure);
    Disconnect(session, "handshake failed", kErrorLinger);
    return;
  }
  WireHeader reply;
  reply.kind = MessageKind::kHello;
  reply.flags = kFlagReply;
  reply.request_id = h.request_id;
  SendOwned(session, reply, HelloBytes(answer));
}

}  // namespace leeway
