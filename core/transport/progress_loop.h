// ProgressLoop: one UCP context, one UCP worker, the lock that serializes
// every use of them, and a progress thread.
//
// Whoever holds the worker lock may call UCX and touch the transport's
// state: the progress thread, or a caller thread that runs its operation
// directly (RunOrPost) or drives progress while it waits (TryDrive), the
// way ucx_perftest does, instead of handing work over and sleeping, which
// costs two context switches per operation. The progress thread polls while
// traffic flows and, after `busy_poll` without events, arms the worker and
// sleeps on UCX's wakeup fd (plus an eventfd for Post), so an idle process
// costs no CPU (shared/notes/ucx.md). It polls after an event only while
// polling pays (SpinPolicy): a stream of messages on loopback or shared
// memory is polled for; one on a slow TCP link, where each poll is a system
// call that would not catch the next message anyway, is slept for (such
// polls took a third of two cores' CPU in a 1 Gbit/s study run). While a
// caller drives, it stays out of the way, and while callers send on their
// own threads it sleeps as soon as the worker is idle instead of polling
// (on two cores a polling thread took the CPU the sender needed). When UCX
// keeps saying events are pending that never come while every
// shared-memory peer is silent (StallDetector: a shared-memory FIFO stopped
// by a dead sender) it polls each millisecond instead of spinning, logs it,
// and counts it (stalls()). `on_tick`
// runs at least every `tick` for deadlines and keepalives, on whichever
// thread drives.
//
// Thread-safety: Post(), RunOrPost(), TryDrive() and Stop() from any thread;
// the rest only with the worker lock held (inside posted work, callbacks
// and handlers) or before Start().
#ifndef LEEWAY_CORE_TRANSPORT_PROGRESS_LOOP_H_
#define LEEWAY_CORE_TRANSPORT_PROGRESS_LOOP_H_

#include <ucp/api/ucp.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/transport/spin_policy.h"
#include "core/transport/stall_detector.h"
#include "core/transport/worker_lock.h"

namespace leeway {

class ProgressLoop {
 public:
  struct Options {
    absl::Duration busy_poll = absl::Microseconds(50);
    absl::Duration tick = absl::Milliseconds(10);
    // Use CMA when UCX_TLS allows it (see ucx_tls.h for why not by default).
    bool allow_cma = false;
    // How long shared-memory peers must be silent, among the other signs,
    // for a stall (stall_detector.h): longer than their keepalive interval.
    absl::Duration stall_window = absl::Seconds(1);
  };

  static absl::StatusOr<std::unique_ptr<ProgressLoop>> Create(
      const Options& options);
  ~ProgressLoop();

  ProgressLoop(const ProgressLoop&) = delete;
  ProgressLoop& operator=(const ProgressLoop&) = delete;

  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // Whether UCX_TLS has a transport for host:port endpoints (ucx_tls.h).
  bool has_network_transport() const { return has_network_; }

  // Starts the thread. `on_tick(now)` runs periodically; `on_stop` runs once
  // on the loop thread when Stop() is called, before the thread exits;
  // `has_shared_memory_peers()` says whether the process has any (worker
  // lock held; asked once a stall window).
  void Start(std::function<void(absl::Time)> on_tick, std::function<void()> on_stop,
             std::function<bool()> has_shared_memory_peers);

  // Worker lock held: a message came from a shared-memory peer (evidence
  // that the FIFO works: stall_detector.h).
  void NoteSharedMemoryMessage() { stall_.OnSharedMemoryMessage(); }

  // Queues `fn` to run on the loop thread. Returns false (and drops `fn`)
  // once the loop is stopping.
  bool Post(std::function<void()> fn);

  // Runs `fn` now under the worker lock if it is free (or comes free in a
  // moment: Guard::kBriefly), else queues it like Post(). `fn` returns
  // whether it left UCX an operation in flight (a send not finished in the
  // call), which needs progress: then a sleeping loop is woken. Returns
  // false (and drops `fn`) once the loop is stopping.
  bool RunOrPost(std::function<bool()> fn);

  // Holds the worker lock for a scope, for hot paths that cannot afford a
  // closure: kTry takes it only if it is free (and the loop is not
  // stopping); kBriefly also waits out a holder for a moment (about a
  // progress round: cheaper than posting); kWait waits for it. A thread
  // that already holds the lock gets held() == false. Releasing it wakes a
  // sleeping loop if WakeOnRelease() was called: work that UCX queued
  // needs progress. Taking it runs the work posted before, so that what a
  // thread posted and what it runs under the lock keep their order.
  class Guard {
   public:
    enum Mode { kTry, kBriefly, kWait };
    Guard(ProgressLoop* loop, Mode mode);
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    bool held() const { return held_; }
    void WakeOnRelease() { wake_ = true; }

   private:
    ProgressLoop* const loop_;
    bool held_ = false;
    bool wake_ = false;
  };

  // If the worker lock is free, progresses the worker and runs posted work
  // once on this thread; returns whether it did, and sets *busy when
  // anything happened and *now to CachedNow() (read under the lock).
  bool TryDrive(bool* busy, absl::Time* now);

  // A caller stops driving: wakes the progress thread so that it takes over
  // at once.
  void HandBack();

  // How long to poll after an event before sleeping, as SpinPolicy says
  // now. Any thread.
  absl::Duration spin() const {
    return absl::Nanoseconds(spin_ns_.load(std::memory_order_relaxed));
  }

  // How many times UCX stalled (see above). Any thread.
  uint64_t stalls() const { return stalls_.load(std::memory_order_relaxed); }

  // Stops and joins the thread; idempotent.
  void Stop();

  // Whether the calling thread holds the worker lock.
  bool HeldByThisThread() const;

  // The time the last driver read (at most 16 idle rounds old), so that
  // per-message bookkeeping needs no clock read. Worker lock held (a driver
  // gets it from TryDrive).
  absl::Time CachedNow() const { return now_; }

  // Worker lock held: progresses the worker (and runs posted work) until
  // `done()` or `limit` elapses. For orderly shutdown.
  void ProgressUntil(const std::function<bool()>& done, absl::Duration limit);

 private:
  ProgressLoop(const Options& options, ucp_context_h context,
               ucp_worker_h worker, int ucx_fd, int event_fd, int epoll_fd,
               int nap_epoll_fd);
  void Run();
  bool RunPosted();
  void Sleep(absl::Duration max_sleep);
  // Wakes the progress thread if it sleeps.
  void Wake();
  // Waits (at most 1 ms) while a caller drives.
  void Nap();
  // Logs a stall's start or end, and counts starts.
  void ReportStall(bool started);
  // Worker lock held: runs on_tick_ when half a tick has passed.
  void MaybeTick(absl::Time now);

  const Options options_;
  ucp_context_h context_;
  ucp_worker_h worker_;
  const int ucx_fd_;
  const int event_fd_;
  const int epoll_fd_;
  const int nap_epoll_fd_;  // the eventfd alone
  bool has_network_ = true;

  absl::Time now_ = absl::Now();       // worker lock
  absl::Time last_tick_ = absl::Now();  // worker lock
  uint64_t drive_rounds_ = 0;           // worker lock
  const absl::Duration half_tick_ = options_.tick / 2;
  std::function<void(absl::Time)> on_tick_;
  std::function<void()> on_stop_;
  std::function<bool()> has_shared_memory_peers_;
  StallDetector stall_{options_.stall_window};  // worker lock
  std::thread thread_;
  std::atomic<bool> stop_requested_{false};
  // Dekker-style handshake so that Post() writes the eventfd only when the
  // loop may be asleep: the loop sets sleeping_ then checks pending_; Post
  // bumps pending_ then checks sleeping_ (both sequentially consistent).
  std::atomic<bool> sleeping_{false};
  std::atomic<bool> napping_{false};
  std::atomic<int64_t> spin_ns_{absl::ToInt64Nanoseconds(options_.busy_poll)};
  std::atomic<uint64_t> pending_{0};
  std::atomic<uint64_t> stalls_{0};
  // Bumped by each Guard a caller takes (and by TryDrive), under the worker
  // lock: the loop thread does not busy-poll while callers use the worker.
  std::atomic<uint64_t> caller_turns_{0};

  WorkerLock worker_mu_;  // the worker lock (see worker_lock.h for why not a mutex)

  absl::Mutex mu_;
  std::deque<std::function<void()>> posted_ ABSL_GUARDED_BY(mu_);
  bool accepting_ ABSL_GUARDED_BY(mu_) = true;
};

// UCX status as an absl::Status with `what` as context.
absl::Status UcsToStatus(ucs_status_t status, const char* what);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_PROGRESS_LOOP_H_
