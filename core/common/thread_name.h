// Names the calling thread, so that top -H, perf and /proc/<pid>/task/*/comm
// tell a process's threads apart (a worker's push, ack and pull threads
// from its transport's progress thread, a server's apply threads from its
// pull-expiry thread). Linux keeps 15 bytes of a name; longer names are
// cut there. Best effort: a failure changes nothing else.
#ifndef LEEWAY_CORE_COMMON_THREAD_NAME_H_
#define LEEWAY_CORE_COMMON_THREAD_NAME_H_

#include <string>

#include "absl/strings/string_view.h"

namespace leeway {

constexpr size_t kMaxThreadName = 15;

void NameThisThread(absl::string_view name);

// The calling thread's name ("" where it cannot be read).
std::string ThisThreadName();

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_THREAD_NAME_H_
