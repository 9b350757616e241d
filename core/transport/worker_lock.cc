#include "core/transport/worker_lock.h"

#include <sched.h>
#include <time.h>

namespace leeway {

void WorkerLock::lock() {
  // About a progress round of spinning, then yields (the holder may want
  // this CPU), then 50 us naps so that a long handler does not cost a core.
  constexpr int kSpins = 128;
  constexpr int kYields = 64;
  for (int i = 0; !try_lock(); ++i) {
    if (i < kSpins) {
      CpuPause();
    } else if (i < kSpins + kYields) {
      sched_yield();
    } else {
      const timespec nap = {0, 50 * 1000};
      nanosleep(&nap, nullptr);
    }
  }
}

}  // namespace leeway
