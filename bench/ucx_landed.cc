#include "bench/ucx_landed.h"

#include <signal.h>
#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace leeway {
namespace {

constexpr unsigned kDataId = 0, kFenceId = 1, kAckId = 2;
constexpr size_t kHeaderBytes = 64;  // as our wire header
const uint8_t kHeader[kHeaderBytes] = {};
volatile sig_atomic_t g_stop = 0;

absl::Status UcsError(ucs_status_t status, const char* what) {
  return absl::InternalError(absl::StrCat(what, ": ", ucs_status_string(status)));
}

// A UCP context and one single-threaded worker.
struct Endpoint {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  ucp_ep_h ep = nullptr;

  absl::Status Init() {
    ucp_params_t params;
    std::memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM;
    ucs_status_t st = ucp_init(&params, nullptr, &context);
    if (st != UCS_OK) return UcsError(st, "ucp_init");
    ucp_worker_params_t wp;
    std::memset(&wp, 0, sizeof(wp));
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_SINGLE;
    st = ucp_worker_create(context, &wp, &worker);
    if (st != UCS_OK) return UcsError(st, "ucp_worker_create");
    return absl::OkStatus();
  }

  absl::Status SetHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
    ucp_am_handler_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                   UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG;
    p.id = id;
    p.cb = cb;
    p.arg = arg;
    const ucs_status_t st = ucp_worker_set_am_recv_handler(worker, &p);
    return st == UCS_OK ? absl::OkStatus() : UcsError(st, "set_am_handler");
  }

  ~Endpoint() {
    if (ep != nullptr) {
      ucp_request_param_t p;
      std::memset(&p, 0, sizeof(p));
      p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_EP_CLOSE_FLAG_FORCE;
      ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &p);
      const absl::Time end = absl::Now() + absl::Seconds(1);
      while (r != nullptr && !UCS_PTR_IS_ERR(r) &&
             ucp_request_check_status(r) == UCS_INPROGRESS &&
             absl::Now() < end) {
        ucp_worker_progress(worker);
      }
      if (r != nullptr && !UCS_PTR_IS_ERR(r)) ucp_request_free(r);
    }
    if (worker != nullptr) ucp_worker_destroy(worker);
    if (context != nullptr) ucp_cleanup(context);
  }
};

// Counts down a counter when a request completes, and frees it.
void CountDown(void* request, ucs_status_t, void* user_data) {
  --*static_cast<int*>(user_data);
  ucp_request_free(request);
}
void CountDownRecv(void* request, ucs_status_t, size_t, void* user_data) {
  --*static_cast<int*>(user_data);
  ucp_request_free(request);
}

// Sends an AM; a request still in flight counts in *outstanding.
absl::Status Send(ucp_ep_h ep, unsigned id, const void* data, size_t size,
                  int* outstanding) {
  ucp_request_param_t p;
  std::memset(&p, 0, sizeof(p));
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                   UCP_OP_ATTR_FIELD_FLAGS;
  p.flags = UCP_AM_SEND_FLAG_REPLY;
  p.cb.send = &CountDown;
  p.user_data = outstanding;
  ucs_status_ptr_t r =
      ucp_am_send_nbx(ep, id, kHeader, kHeaderBytes, data, size, &p);
  if (UCS_PTR_IS_ERR(r)) return UcsError(UCS_PTR_STATUS(r), "am_send");
  if (r != nullptr) ++*outstanding;
  return absl::OkStatus();
}

struct Server {
  Endpoint ucx;
  std::vector<uint8_t> sink;
  int receiving = 0;  // rendezvous receives in flight
  ucp_ep_h fence_from = nullptr;

  static ucs_status_t OnData(void* arg, const void*, size_t, void* data,
                             size_t length, const ucp_am_recv_param_t* param) {
    auto* s = static_cast<Server*>(arg);
    if (length > s->sink.size()) return UCS_ERR_MESSAGE_TRUNCATED;
    if ((param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) == 0) {
      std::memcpy(s->sink.data(), data, length);
      return UCS_OK;
    }
    ucp_request_param_t p;
    std::memset(&p, 0, sizeof(p));
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.recv_am = &CountDownRecv;
    p.user_data = &s->receiving;
    ucs_status_ptr_t r = ucp_am_recv_data_nbx(s->ucx.worker, data,
                                              s->sink.data(), length, &p);
    if (r != nullptr && !UCS_PTR_IS_ERR(r)) ++s->receiving;
    return UCS_OK;
  }

  static ucs_status_t OnFence(void* arg, const void*, size_t, void*, size_t,
                              const ucp_am_recv_param_t* param) {
    auto* s = static_cast<Server*>(arg);
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
      s->fence_from = param->reply_ep;
    }
    return UCS_OK;
  }
};

}  // namespace

int RunLandedServer(const std::string& ready_file, uint32_t max_size) {
  Server server;
  server.sink.resize(max_size);
  if (!server.ucx.Init().ok() ||
      !server.ucx.SetHandler(kDataId, &Server::OnData, &server).ok() ||
      !server.ucx.SetHandler(kFenceId, &Server::OnFence, &server).ok()) {
    return 1;
  }
  ucp_address_t* address = nullptr;
  size_t length = 0;
  if (ucp_worker_get_address(server.ucx.worker, &address, &length) != UCS_OK) {
    return 1;
  }
  {
    std::ofstream out(ready_file + ".tmp");
    out << absl::BytesToHexString(absl::string_view(
               reinterpret_cast<const char*>(address), length))
        << "\n";
  }
  ucp_worker_release_address(server.ucx.worker, address);
  std::rename((ready_file + ".tmp").c_str(), ready_file.c_str());
  signal(SIGTERM, [](int) { g_stop = 1; });
  while (!g_stop) {
    ucp_worker_progress(server.ucx.worker);
    if (server.fence_from != nullptr && server.receiving == 0) {
      int acking = 0;
      if (!Send(server.fence_from, kAckId, nullptr, 0, &acking).ok()) return 1;
      while (acking > 0 && !g_stop) ucp_worker_progress(server.ucx.worker);
      server.fence_from = nullptr;
    }
  }
  return 0;
}

struct LandedClient::Ucx {
  Endpoint ucx;
  std::vector<uint8_t> data;
  bool acked = false;

  static ucs_status_t OnAck(void* arg, const void*, size_t, void*, size_t,
                            const ucp_am_recv_param_t*) {
    static_cast<Ucx*>(arg)->acked = true;
    return UCS_OK;
  }
};

LandedClient::LandedClient(std::unique_ptr<Ucx> ucx) : ucx_(std::move(ucx)) {}
LandedClient::~LandedClient() = default;

absl::StatusOr<std::unique_ptr<LandedClient>> LandedClient::Connect(
    const std::string& address_hex) {
  auto u = std::make_unique<Ucx>();
  absl::Status st = u->ucx.Init();
  if (st.ok()) st = u->ucx.SetHandler(kAckId, &Ucx::OnAck, u.get());
  if (!st.ok()) return st;
  const std::string address = absl::HexStringToBytes(address_hex);
  ucp_ep_params_t params;
  std::memset(&params, 0, sizeof(params));
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  const ucs_status_t cst = ucp_ep_create(u->ucx.worker, &params, &u->ucx.ep);
  if (cst != UCS_OK) return UcsError(cst, "ucp_ep_create");
  return std::unique_ptr<LandedClient>(new LandedClient(std::move(u)));
}

absl::StatusOr<double> LandedClient::TimePushes(uint32_t size, int count,
                                                int window) {
  Ucx& u = *ucx_;
  if (u.data.size() < size) u.data.assign(size, 0xA5);
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + absl::Seconds(60);
  int outstanding = 0;
  auto progress_while = [&](auto busy) -> absl::Status {
    for (unsigned spins = 1; busy(); ++spins) {
      ucp_worker_progress(u.ucx.worker);
      if (spins % 256 == 0 && absl::Now() > deadline) {
        return absl::DeadlineExceededError("landed baseline stalled");
      }
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < count; ++i) {
    absl::Status st =
        progress_while([&] { return outstanding >= window; });
    if (st.ok()) st = Send(u.ucx.ep, kDataId, u.data.data(), size, &outstanding);
    if (!st.ok()) return st;
  }
  u.acked = false;
  absl::Status st = progress_while([&] { return outstanding > 0; });
  if (st.ok()) st = Send(u.ucx.ep, kFenceId, nullptr, 0, &outstanding);
  if (st.ok()) st = progress_while([&] { return !u.acked || outstanding > 0; });
  if (!st.ok()) return st;
  return absl::ToDoubleSeconds(absl::Now() - start);
}

}  // namespace leeway
