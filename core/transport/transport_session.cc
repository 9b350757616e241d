// Transport: connections. Endpoint creation (listener, sockaddr, worker
// address), keepalives, and peer loss. The handshake is in
// transport_handshake.cc.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/common/logging.h"
#include "core/transport/transport_impl.h"

namespace leeway {
namespace {

constexpr std::memory_order kRelaxed = std::memory_order_relaxed;

absl::StatusOr<sockaddr_in> ParseIpv4(const std::string& host, uint16_t port) {
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  const std::string numeric = host == "localhost" ? "127.0.0.1" : host;
  if (inet_pton(AF_INET, numeric.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an IPv4 address: '", host, "'"));
  }
  return addr;
}

}  // namespace

// ----------------------------------------------------------- sessions

Transport::Impl::Session* Transport::Impl::NewSession(ucp_ep_h ep,
                                                      bool outbound,
                                                      std::string description) {
  auto session = std::make_unique<Session>();
  session->id = next_peer_id_++;
  session->ep = ep;
  session->outbound = outbound;
  session->description =
      absl::StrCat("peer ", session->id, " (", description, ")");
  session->created = session->last_heard = absl::Now();
  Session* raw = session.get();
  sessions_[raw->id] = std::move(session);
  if (ep != nullptr) AddReceiveKey(raw, ep);
  return raw;
}

void Transport::Impl::AddReceiveKey(Session* session, ucp_ep_h ep) {
  if (!peer_by_ep_.emplace(ep, session->id).second) return;
  session->receive_keys.push_back(ep);
}

Transport::Impl::Session* Transport::Impl::FindSession(PeerId peer) {
  auto it = sessions_.find(peer);
  return it == sessions_.end() ? nullptr : it->second.get();
}

Transport::Impl::Session* Transport::Impl::SessionOf(ucp_ep_h reply_ep,
                                                     const WireHeader* h) {
  auto known = peer_by_ep_.find(reply_ep);
  if (known != peer_by_ep_.end()) return FindSession(known->second);
  if (h != nullptr && h->is_reply() &&
      (h->kind == MessageKind::kHello || h->kind == MessageKind::kError)) {
    auto call = calls_.find(h->request_id);
    if (call != calls_.end() && call->second.kind == MessageKind::kHello) {
      Session* session = FindSession(call->second.peer);
      if (session != nullptr && session->state != SessionState::kReady) {
        AddReceiveKey(session, reply_ep);
        return session;
      }
    }
  }
  // A peer that reached us by our worker address (UCX made this endpoint).
  Session* session = NewSession(nullptr, /*outbound=*/false,
                                "inbound by worker address");
  AddReceiveKey(session, reply_ep);
  return session;
}

absl::StatusOr<ucp_ep_h> Transport::Impl::CreateEndpointToAddress(
    const std::string& address) {
  // UCX 1.13's peer-failure mode excludes shared memory; keepalives and
  // deadlines detect a lost peer instead.
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ucp_ep_h ep = nullptr;
  LEEWAY_RETURN_IF_ERROR_UCS(ucp_ep_create(loop_->worker(), &params, &ep),
                             "ucp_ep_create");
  return ep;
}

// ------------------------------------------------------- endpoints

absl::StatusOr<std::string> Transport::Impl::WorkerAddress() {
  return RunOnLoop<std::string>([this]() -> absl::StatusOr<std::string> {
    ucp_address_t* address = nullptr;
    size_t length = 0;
    LEEWAY_RETURN_IF_ERROR_UCS(
        ucp_worker_get_address(loop_->worker(), &address, &length),
        "ucp_worker_get_address");
    std::string out(reinterpret_cast<const char*>(address), length);
    ucp_worker_release_address(loop_->worker(), address);
    return out;
  });
}

absl::StatusOr<uint16_t> Transport::Impl::Listen(const std::string& host,
                                                 uint16_t port) {
  return RunOnLoop<uint16_t>([this, host, port]() -> absl::StatusOr<uint16_t> {
    if (listener_ != nullptr) {
      return absl::FailedPreconditionError("already listening");
    }
    absl::StatusOr<sockaddr_in> addr = ParseIpv4(host, port);
    if (!addr.ok()) return addr.status();
    ucp_listener_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                        UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&*addr);
    params.sockaddr.addrlen = sizeof(*addr);
    params.conn_handler.cb = &Impl::ConnectionCallback;
    params.conn_handler.arg = this;
    LEEWAY_RETURN_IF_ERROR_UCS(
        ucp_listener_create(loop_->worker(), &params, &listener_),
        "ucp_listener_create");
    ucp_listener_attr_t attr;
    std::memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    LEEWAY_RETURN_IF_ERROR_UCS(ucp_listener_query(listener_, &attr),
                               "ucp_listener_query");
    const uint16_t bound =
        ntohs(reinterpret_cast<const sockaddr_in*>(&attr.sockaddr)->sin_port);
    LEEWAY_LOG(INFO) << "listening on " << host << ":" << bound;
    return bound;
  });
}

void Transport::Impl::ConnectionCallback(ucp_conn_request_h request,
                                         void* arg) {
  auto* impl = static_cast<Impl*>(arg);
  if (impl->stopping_) {
    ucp_listener_reject(impl->listener_, request);
    return;
  }
  std::string from = "listener";
  ucp_conn_request_attr_t attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
  if (ucp_conn_request_query(request, &attr) == UCS_OK) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&attr.client_address);
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
    from = absl::StrCat(text, ":", ntohs(in->sin_port));
  }
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.conn_request = request;
  params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  params.err_handler.cb = &Impl::EndpointErrorCallback;
  params.err_handler.arg = impl;
  ucp_ep_h ep = nullptr;
  const ucs_status_t st = ucp_ep_create(impl->loop_->worker(), &params, &ep);
  if (st != UCS_OK) {
    LEEWAY_LOG(WARNING) << "could not accept " << from << ": "
                        << ucs_status_string(st);
    return;
  }
  impl->NewSession(ep, /*outbound=*/false,
                   absl::StrCat("accepted from ", from));
}

void Transport::Impl::EndpointErrorCallback(void* arg, ucp_ep_h ep,
                                            ucs_status_t status) {
  auto* impl = static_cast<Impl*>(arg);
  auto it = impl->peer_by_ep_.find(ep);
  if (it == impl->peer_by_ep_.end()) return;
  Session* session = impl->FindSession(it->second);
  if (session == nullptr) return;
  impl->PeerLost(session, UcsToStatus(status, "connection failed"));
}

absl::StatusOr<PeerId> Transport::Impl::Connect(const ConnectTarget& target,
                                                bool handshake) {
  Ticket ticket;
  if (!loop_->Post([this, target, handshake, ticket] {
        StartConnect(target, handshake, ticket);
      })) {
    return absl::UnavailableError("transport is stopped");
  }
  const absl::Status status =
      ticket.Wait(absl::Now() + options_.handshake_timeout + absl::Seconds(2));
  if (!status.ok()) return status;
  return ticket.reply().peer;
}

void Transport::Impl::StartConnect(const ConnectTarget& target,
                                   bool handshake, Ticket ticket) {
  if (stopping_) {
    ticket.Complete(absl::UnavailableError("transport is stopping"));
    return;
  }
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  std::string description;
  sockaddr_in addr;
  if (!target.host.empty()) {
    absl::StatusOr<sockaddr_in> parsed = ParseIpv4(target.host, target.port);
    if (!parsed.ok()) {
      ticket.Complete(parsed.status());
      return;
    }
    addr = *parsed;
    if (!loop_->has_network_transport()) {
      // UCX 1.13 would try, fail, and then trip an assertion of its own
      // while tearing the half-made endpoint down.
      ticket.Complete(absl::FailedPreconditionError(absl::StrCat(
          "cannot connect to ", target.host, ":", target.port,
          ": UCX_TLS has no network transport (tcp or RDMA) for host:port "
          "endpoints; connect by worker address for shared memory")));
      return;
    }
    params.field_mask = UCP_EP_PARAM_FIELD_FLAGS |
                        UCP_EP_PARAM_FIELD_SOCK_ADDR |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr = reinterpret_cast<const sockaddr*>(&addr);
    params.sockaddr.addrlen = sizeof(addr);
    // Peer-failure mode is available on sockaddr endpoints (TCP-class).
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &Impl::EndpointErrorCallback;
    params.err_handler.arg = this;
    description = absl::StrCat("connected to ", target.host, ":", target.port);
  }
  ucp_ep_h ep = nullptr;
  if (!target.host.empty()) {
    const ucs_status_t st = ucp_ep_create(loop_->worker(), &params, &ep);
    if (st != UCS_OK) {
      ticket.Complete(UcsToStatus(st, "ucp_ep_create"));
      return;
    }
  } else {
    absl::StatusOr<ucp_ep_h> created =
        CreateEndpointToAddress(target.worker_address);
    if (!created.ok()) {
      ticket.Complete(created.status());
      return;
    }
    ep = *created;
    description = "connected by worker address";
  }
  Session* session = NewSession(ep, /*outbound=*/true, std::move(description));
  session->connect_ticket = ticket;
  if (!handshake) {
    session->state = SessionState::kReady;
    session->keepalives = false;
    Message result;
    result.peer = session->id;
    ticket.Complete(absl::OkStatus(), std::move(result));
    return;
  }
  StartHandshake(session, /*by_address=*/target.host.empty());
}

// --------------------------------------------- liveness and loss

void Transport::Impl::CheckSessions(absl::Time now) {
  std::vector<Session*> all;
  for (auto& entry : sessions_) all.push_back(entry.second.get());
  for (Session* session : all) {
    if (session->state != SessionState::kReady) {
      if (!session->outbound &&
          now - session->created > options_.handshake_timeout) {
        counters_.handshake_failures.fetch_add(1, kRelaxed);
        LEEWAY_LOG(WARNING) << session->description
                            << " never completed HELLO; disconnecting";
        Disconnect(session, "no HELLO");
      }
      continue;
    }
    if (now - session->last_heard > options_.peer_timeout) {
      PeerLost(session, absl::UnavailableError(absl::StrCat(
                            session->description, " silent for ",
                            absl::FormatDuration(now - session->last_heard))));
      continue;
    }
    if (session->outbound && session->keepalives &&
        !session->keepalive_in_flight &&
        now - session->last_heard > options_.peer_timeout / 4) {
      session->keepalive_in_flight = true;
      WireHeader ping;
      ping.kind = MessageKind::kKeepalive;
      const PeerId id = session->id;
      StartCall(session, ping, {}, {}, {}, now + options_.peer_timeout,
                [this, id](absl::Status, Message) {
                  Session* s = FindSession(id);
                  if (s != nullptr) s->keepalive_in_flight = false;
                });
    }
  }
}

void Transport::Impl::PeerLost(Session* session, const absl::Status& why) {
  counters_.peers_lost.fetch_add(1, kRelaxed);
  const bool ready = session->state == SessionState::kReady;
  if (!ready) counters_.handshake_failures.fetch_add(1, kRelaxed);
  LEEWAY_LOG(WARNING) << "lost " << session->description << ": " << why;
  if (ready) {
    std::shared_ptr<PeerLostHandler> handler;
    {
      absl::MutexLock lock(&handlers_mu_);
      handler = peer_lost_handler_;
    }
    if (handler != nullptr && *handler) (*handler)(session->id, why);
  }
  // Disconnect fails every call with this peer (UNAVAILABLE, naming `why`).
  Disconnect(session, absl::StrCat("peer lost: ", why.ToString()));
}

void Transport::Impl::OnTransferError(PeerId peer, const absl::Status& status) {
  Session* session = FindSession(peer);
  if (session != nullptr) PeerLost(session, status);
}

void Transport::Impl::Disconnect(Session* session, const std::string& why,
                                 absl::Duration linger) {
  const PeerId id = session->id;
  const absl::Time orphaned_after = absl::Now() + kOrphanLinger;
  for (SendContext* ctx : sends_in_flight_) {
    if (ctx->peer == id) ctx->orphaned_after = orphaned_after;
  }
  for (RecvContext* ctx : recvs_in_flight_) {
    if (ctx->message.peer == id) ctx->orphaned_after = orphaned_after;
  }
  const ucp_ep_h ep = session->ep;
  Ticket connect = session->connect_ticket;
  LEEWAY_LOG(DEBUG) << "disconnecting " << session->description << ": " << why;
  for (ucp_ep_h key : session->receive_keys) peer_by_ep_.erase(key);
  sessions_.erase(id);  // `session` dangles from here on
  connect.Complete(absl::UnavailableError(absl::StrCat("disconnected: ", why)));
  // Calls to this peer fail now; their buffers are released once the
  // endpoint's close cancels the requests that still hold them.
  std::vector<uint64_t> ids;
  for (auto& entry : calls_) {
    if (entry.second.peer == id) ids.push_back(entry.first);
  }
  for (uint64_t call : ids) {
    SetCallResult(call, absl::UnavailableError(absl::StrCat(
                            "disconnected from peer ", id, ": ", why)),
                  Message());
  }
  if (ep != nullptr) {
    if (linger > absl::ZeroDuration()) {
      lingering_.push_back({ep, id, absl::Now() + linger});
    } else {
      CloseEndpoint(ep);
    }
  }
  for (uint64_t call : ids) FinishCallIfReady(call);
}

void Transport::Impl::CloseEndpoint(ucp_ep_h ep) {
  ucp_request_param_t param;
  std::memset(&param, 0, sizeof(param));
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t request = ucp_ep_close_nbx(ep, &param);
  if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
  closing_requests_.push_back(request);
}

void Transport::Impl::PollCloses(absl::Time now) {
  for (size_t i = 0; i < lingering_.size();) {
    bool sending = false;
    for (SendContext* ctx : sends_in_flight_) {
      sending |= ctx->peer == lingering_[i].peer;
    }
    if (sending && now < lingering_[i].close_by) {
      ++i;
      continue;
    }
    const ucp_ep_h ep = lingering_[i].ep;
    lingering_.erase(lingering_.begin() + i);
    CloseEndpoint(ep);
  }
  for (size_t i = 0; i < closing_requests_.size();) {
    void* request = closing_requests_[i];
    if (ucp_request_check_status(request) == UCS_INPROGRESS) {
      ++i;
      continue;
    }
    ucp_request_free(request);
    closing_requests_.erase(closing_requests_.begin() + i);
  }
}

std::string Transport::Impl::DescribeLanes(ucp_ep_h ep) {
  char* text = nullptr;
  size_t size = 0;
  FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return "unknown";
  ucp_ep_print_info(ep, stream);
  fclose(stream);
  std::vector<std::string> transports;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text, size), '\n')) {
    // "#   lane[0]:  1:tcp/lo.0 md[0] ... am am_bw#0"
    const size_t lane = line.find("lane[");
    if (lane == absl::string_view::npos) continue;
    const size_t colon = line.find(':', line.find("]:", lane) + 2);
    if (colon == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(colon + 1);
    const std::string name(rest.substr(0, rest.find(' ')));
    if (std::find(transports.begin(), transports.end(), name) ==
        transports.end()) {
      transports.push_back(name);
    }
  }
  free(text);
  return transports.empty() ? "unknown" : absl::StrJoin(transports, ",");
}

void Transport::Impl::MarkReady(Session* session, const char* how) {
  session->state = SessionState::kReady;
  const std::string lanes = session->ep != nullptr ? DescribeLanes(session->ep) : "unknown";
  session->shared_memory = lanes.find("/memory") != std::string::npos;
  LEEWAY_LOG(INFO) << session->description << " " << how << ", rank " << session->peer_rank
                   << ", transport " << lanes;
}

bool Transport::Impl::HasSharedMemoryPeers() const {
  for (const auto& entry : sessions_) {
    if (entry.second->state == SessionState::kReady && entry.second->shared_memory) return true;
  }
  return false;
}

absl::StatusOr<std::string> Transport::Impl::PeerTransportName(PeerId peer) {
  return RunOnLoop<std::string>([this, peer]() -> absl::StatusOr<std::string> {
    Session* session = FindSession(peer);
    if (session == nullptr || session->ep == nullptr) {
      return absl::NotFoundError(absl::StrCat("no peer ", peer));
    }
    return DescribeLanes(session->ep);
  });
}

int Transport::Impl::ConnectedPeers() {
  absl::StatusOr<int> count = RunOnLoop<int>([this]() -> absl::StatusOr<int> {
    int ready = 0;
    for (auto& entry : sessions_) {
      ready += entry.second->state == SessionState::kReady ? 1 : 0;
    }
    return ready;
  });
  return count.ok() ? *count : 0;
}

}  // namespace leeway
