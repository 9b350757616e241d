// Rewrites a UCX transport list (the value of UCX_TLS) so that it leaves out
// CMA unless the list names it explicitly.
//
// Why: in UCX 1.13 a peer killed during a CMA rendezvous makes
// process_vm_readv fail, and without peer-failure mode (which shared memory
// does not support) UCX treats that as fatal and aborts the *surviving*
// process. The shared-memory FIFOs (sysv, posix) have no such failure and
// measured within 75-100% of CMA's bandwidth here (bench/README.md).
//   "sm,self" -> "sysv,posix,self"    "all" -> "^cma"    "^tcp" -> "^tcp,cma"
// Pure function, thread-safe.
#ifndef LEEWAY_CORE_TRANSPORT_UCX_TLS_H_
#define LEEWAY_CORE_TRANSPORT_UCX_TLS_H_

#include <string>

#include "absl/strings/string_view.h"

namespace leeway {

std::string TransportListWithoutCma(absl::string_view tls);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_UCX_TLS_H_
