// WorkerLock: the lock that serializes a process's use of its UCP worker
// (progress_loop.h): a spin lock whose release is a plain store.
//
// Why not std::mutex: on x86 a mutex's release is a locked instruction,
// which waits until every store before it has left the core. Right after an
// eager send on shared memory those stores are the copy of the payload into
// the peer's FIFO, whose cache lines the peer's core holds (it read the
// message before); a sender that released a mutex there stood still until
// every line had come back, once per message (README, "Transport"). A plain
// store lets the sender go on while they drain.
//
// Guarantees: mutual exclusion with acquire/release ordering (what the lock
// holder wrote is seen by the next holder); not recursive; not fair. lock()
// spins for a moment, then yields the CPU between tries and, after a while,
// sleeps briefly between them: holders keep it for a progress round or a
// handler, and the blocking lock() is for rare paths (SetHandler, Stop).
// Thread-safety: every member from any thread.
#ifndef LEEWAY_CORE_TRANSPORT_WORKER_LOCK_H_
#define LEEWAY_CORE_TRANSPORT_WORKER_LOCK_H_

#include <atomic>
#include <cstdint>

namespace leeway {

// Tells the CPU this thread spins (x86 pause, Arm yield).
inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

class WorkerLock {
 public:
  WorkerLock() = default;
  WorkerLock(const WorkerLock&) = delete;
  WorkerLock& operator=(const WorkerLock&) = delete;

  // Takes the lock if it is free; never waits.
  bool try_lock() {
    // Read first: a failed exchange would take the line from the holder.
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  // Waits until it has the lock.
  void lock();
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

// Bumps a counter that only the holder of a WorkerLock writes (others may
// read it at any time): a load and a store, no locked instruction.
inline void BumpUnderLock(std::atomic<uint64_t>& counter, uint64_t by) {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_WORKER_LOCK_H_
