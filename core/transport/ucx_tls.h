// Reading a UCX transport list (the value of UCX_TLS): leaving out CMA, and
// telling whether it has a network transport.
//
// TransportListWithoutCma rewrites the list so that it leaves out CMA
// unless the list names it explicitly.
//
// Why: in UCX 1.13 a peer killed during a CMA rendezvous makes
// process_vm_readv fail, and without peer-failure mode (which shared memory
// does not support) UCX treats that as fatal and aborts the *surviving*
// process. The shared-memory FIFOs (sysv, posix) have no such failure and
// measured within 75-100% of CMA's bandwidth here (bench/README.md).
//   "sm,self" -> "sysv,posix,self"    "all" -> "^cma"    "^tcp" -> "^tcp,cma"
//
// TransportListHasNetwork: whether the list can carry a host:port (sockaddr)
// endpoint, which UCX 1.13 wires up over TCP or RDMA only, never over shared
// memory or self. A deny list ("^...") or "all" keeps TCP.
// Pure functions, thread-safe.
#ifndef LEEWAY_CORE_TRANSPORT_UCX_TLS_H_
#define LEEWAY_CORE_TRANSPORT_UCX_TLS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace leeway {

std::string TransportListWithoutCma(absl::string_view tls);
bool TransportListHasNetwork(absl::string_view tls);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_UCX_TLS_H_
