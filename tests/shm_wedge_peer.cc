// shm_wedge_peer: a shared-memory sender that dies inside a send, at the
// one moment that matters, so that a test can show what it does to the
// receiver without waiting for a lucky SIGKILL.
//
//   shm_wedge_peer --server_file=F
//
// Reads the server's UCP worker address from a tests/ready_file.h file,
// connects to it with plain UCP (UCX_TLS from the environment, shared
// memory in the tests) and sends one active message whose data UCX copies
// through a generic datatype. UCX's shared-memory transport (uct mm)
// reserves a slot in the receiver's FIFO, then calls the pack callback,
// then publishes the slot; the pack callback here sends SIGKILL to its own
// process. The slot stays reserved and never published, and the receiver,
// which reads its FIFO in order, hears nothing more from any sender on that
// FIFO: the receiver's side of what a peer killed mid-transfer leaves
// behind (found in transport_process_test, shared/notes/ucx.md).
//
// Exits 1 (and says why) if the message is never packed within 10 s; on
// success it never exits normally: it dies of SIGKILL.
#include <signal.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/transport/progress_loop.h"

ABSL_FLAG(std::string, server_file, "", "the server's ready file");

namespace {

constexpr size_t kMessageBytes = 2000;  // eager, copied: bcopy

void* StartPack(void* context, const void*, size_t) { return context; }
void* StartUnpack(void* context, void*, size_t) { return context; }
size_t PackedSize(void*) { return kMessageBytes; }
size_t Pack(void*, size_t, void*, size_t) {
  // Inside uct_mm_ep_am_bcopy: the receiver's FIFO slot is reserved.
  kill(getpid(), SIGKILL);
  pause();
  return 0;
}
ucs_status_t Unpack(void*, size_t, const void*, size_t) { return UCS_OK; }
void Finish(void*) {}

int Fail(const char* what, ucs_status_t status) {
  std::printf("WEDGE %s: %s\n", what, ucs_status_string(status));
  return 1;
}

int Run() {
  std::ifstream in(absl::GetFlag(FLAGS_server_file));
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> lines = absl::StrSplit(text.str(), '\n');
  if (lines.size() < 2 || lines[1].empty()) {
    std::printf("WEDGE no worker address in %s\n",
                absl::GetFlag(FLAGS_server_file).c_str());
    return 1;
  }
  const std::string address = absl::HexStringToBytes(lines[1]);

  // The transport's own UCP set-up (same UCX_TLS reading), driven by hand.
  absl::StatusOr<std::unique_ptr<leeway::ProgressLoop>> loop =
      leeway::ProgressLoop::Create(leeway::ProgressLoop::Options());
  if (!loop.ok()) {
    std::printf("WEDGE %s\n", loop.status().ToString().c_str());
    return 1;
  }
  ucp_worker_h worker = (*loop)->worker();
  ucp_ep_params_t ep_params;
  std::memset(&ep_params, 0, sizeof(ep_params));
  ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep_params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  ucp_ep_h ep = nullptr;
  ucs_status_t st = ucp_ep_create(worker, &ep_params, &ep);
  if (st != UCS_OK) return Fail("ucp_ep_create", st);

  ucp_generic_dt_ops_t ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.start_pack = StartPack;
  ops.start_unpack = StartUnpack;
  ops.packed_size = PackedSize;
  ops.pack = Pack;
  ops.unpack = Unpack;
  ops.finish = Finish;
  ucp_datatype_t datatype;
  st = ucp_dt_create_generic(&ops, nullptr, &datatype);
  if (st != UCS_OK) return Fail("ucp_dt_create_generic", st);

  static char payload[kMessageBytes];
  ucp_request_param_t send;
  std::memset(&send, 0, sizeof(send));
  send.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_FLAGS;
  send.datatype = datatype;
  send.flags = UCP_AM_SEND_FLAG_EAGER;
  ucs_status_ptr_t request =
      ucp_am_send_nbx(ep, /*id=*/7, nullptr, 0, payload, 1, &send);
  if (UCS_PTR_IS_ERR(request)) {
    return Fail("ucp_am_send_nbx", UCS_PTR_STATUS(request));
  }
  // Not packed at once (the endpoint was still wiring up): progress.
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (absl::Now() < until) ucp_worker_progress(worker);
  std::printf("WEDGE the message was never packed\n");
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return Run();
}
