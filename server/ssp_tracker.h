// The server's view of its workers' clocks, and the SSP pull condition
// (DESIGN.md, Consistency).
//
// - A worker's clock counts its completed iterations; pushes during clock t
//   are stamped t; CLOCK(t+1, n) says it sent this server n pushes for t.
// - The view of worker w advances to t+1 only when CLOCK(t+1) has arrived
//   and all n pushes stamped t have been applied, in whatever order the
//   messages came.
// - min_clock is the smallest view among live workers.
// - A pull by w at clock c is ready when min_clock >= c - s and w's view is
//   at least c (read-my-writes). With s = kAsync pulls never wait.
//   Ready pulls are answered at once on the caller's thread; the others
//   are parked and answered (by whichever thread makes them ready) when the
//   condition holds, or with DEADLINE_EXCEEDED by Expire.
// - A dead worker leaves min_clock at once; a worker that (re)joins starts
//   at the current min_clock.
// - Pushes may arrive before or after the CLOCK that counts them (a large
//   push by rendezvous lands after a small CLOCK sent later); CLOCKs of one
//   worker arrive in order (one endpoint per peer, which UCX keeps ordered).
// - Bad clocks are refused with a Status and change nothing: a CLOCK that
//   is not the next one (backwards, duplicated, skipping), a push stamped
//   for a closed clock or more than kMaxOpenClocks ahead of the view, more
//   pushes than a CLOCK announced, anything from a worker that has not
//   joined.
//
// Callbacks never run under the tracker's lock. Thread-safe.
#ifndef LEEWAY_SERVER_SSP_TRACKER_H_
#define LEEWAY_SERVER_SSP_TRACKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leeway {

class SspTracker {
 public:
  static constexpr int64_t kAsync = -1;
  static constexpr uint32_t kMaxOpenClocks = 1024;
  using PullDone = std::function<void(absl::Status)>;

  // staleness >= 0, or kAsync.
  explicit SspTracker(int64_t staleness);

  int64_t staleness() const { return staleness_; }

  // (rank, view) of every live worker, for checkpoints.
  std::vector<std::pair<uint32_t, uint32_t>> Views() const;
  // How many workers are live (expected ones included). Lock-free: the
  // servers ask on every push; counted when membership changes.
  size_t LiveWorkers() const { return live_workers_.load(std::memory_order_relaxed); }
  // Restores a worker at `view` (from a checkpoint): live, clocks below
  // `view` closed, CLOCK(view + 1) expected next.
  void RestoreView(uint32_t rank, uint32_t view);

  // Declares a worker the job expects: it counts in min_clock (at clock 0)
  // before it joins, so that the first workers to start wait for it.
  void Expect(uint32_t rank);
  // Joins (or rejoins) a worker at the current min_clock (0 when it is the
  // first); returns that clock. A live worker joining again keeps its view.
  // A worker that names the clock it is at (`resume_at` > 0: it reconnects
  // to a server restarted from a checkpoint) resumes there: its view moves
  // up to `resume_at` (the pushes of the clocks in between were lost with
  // the server's state) and never back. Every join starts a new push
  // session: the counts of the open clocks restart (the worker's do too),
  // and pushes of an earlier session that finish applying later count
  // nowhere.
  uint32_t Join(uint32_t rank, uint32_t resume_at = 0);
  // Declares a worker dead; parked pulls of the others re-check.
  void Leave(uint32_t rank);

  // Before applying a push stamped `clock`: refuses bad stamps and counts
  // the push as received; returns the worker's push session, which the
  // two calls below name.
  absl::StatusOr<uint64_t> ReceivePush(uint32_t rank, uint32_t clock);
  // After applying it: may advance the view and answer parked pulls.
  void PushApplied(uint32_t rank, uint32_t clock, uint64_t session);
  // A push that was received but then refused (bad payload): uncounts it.
  void PushDropped(uint32_t rank, uint32_t clock, uint64_t session);

  // CLOCK(clock, pushes) from `rank`.
  absl::Status Clock(uint32_t rank, uint32_t clock, uint32_t pushes);

  // Calls done(OkStatus()) now if the pull is ready, else parks it until
  // `deadline`. Unknown workers get FAILED_PRECONDITION at once.
  void Pull(uint32_t rank, uint32_t clock, absl::Time deadline, PullDone done);
  // Answers parked pulls whose deadline is before `now`.
  void Expire(absl::Time now);

  // Smallest view among live workers (max uint32 when there is none).
  uint32_t MinClock() const;
  // The largest clock a live worker has announced (its current clock).
  uint32_t MaxClock() const;
  // The view of one worker, or an error if it never joined.
  absl::StatusOr<uint32_t> ViewOf(uint32_t rank) const;
  size_t parked() const;

 private:
  struct Worker {
    bool live = true;
    uint32_t view = 0;        // clocks fully applied
    uint32_t next_clock = 1;  // the CLOCK it must send next
    // Per clock t >= view: pushes announced by CLOCK(t+1), received, applied.
    std::map<uint32_t, uint32_t> announced;
    std::map<uint32_t, uint32_t> received;
    std::map<uint32_t, uint32_t> applied;
    uint64_t session = 0;  // joins so far
  };
  struct Parked {
    uint32_t rank;
    uint32_t clock;
    absl::Time deadline;
    PullDone done;
  };

  bool Ready(uint32_t rank, uint32_t clock) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Advance(Worker& w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint32_t MinClockLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Recounts live_workers_ after a change of membership.
  void CountLive() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the parked pulls that became ready into `out`.
  void TakeReady(std::vector<PullDone>* out) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int64_t staleness_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<uint32_t, Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<Parked> parked_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> live_workers_{0};  // written under mu_
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_SSP_TRACKER_H_
