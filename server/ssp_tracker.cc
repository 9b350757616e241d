#include "server/ssp_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace leeway {
namespace {

void RunAll(std::vector<SspTracker::PullDone>& ready, const absl::Status& status) {
  for (auto& done : ready) done(status);
}

}  // namespace

SspTracker::SspTracker(int64_t staleness) : staleness_(staleness) {}

uint32_t SspTracker::MinClockLocked() const {
  uint32_t min = std::numeric_limits<uint32_t>::max();
  for (const auto& [rank, w] : workers_) {
    if (w.live) min = std::min(min, w.view);
  }
  return min;
}

bool SspTracker::Ready(uint32_t rank, uint32_t clock) const {
  if (staleness_ == kAsync) return true;
  auto it = workers_.find(rank);
  if (it == workers_.end() || !it->second.live) return false;
  if (it->second.view < clock) return false;
  return int64_t{MinClockLocked()} + staleness_ >= int64_t{clock};
}

void SspTracker::TakeReady(std::vector<PullDone>* out) {
  auto keep = parked_.begin();
  for (auto it = parked_.begin(); it != parked_.end(); ++it) {
    if (Ready(it->rank, it->clock)) {
      out->push_back(std::move(it->done));
    } else {
      if (keep != it) *keep = std::move(*it);
      ++keep;
    }
  }
  parked_.erase(keep, parked_.end());
}

void SspTracker::Advance(Worker& w) {
  for (;;) {
    auto announced = w.announced.find(w.view);
    if (announced == w.announced.end()) return;
    auto applied = w.applied.find(w.view);
    const uint32_t done = applied == w.applied.end() ? 0 : applied->second;
    if (done < announced->second) return;
    w.announced.erase(announced);
    if (applied != w.applied.end()) w.applied.erase(applied);
    w.received.erase(w.view);
    ++w.view;
  }
}

std::vector<std::pair<uint32_t, uint32_t>> SspTracker::Views() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<uint32_t, uint32_t>> views;
  for (const auto& [rank, w] : workers_) {
    if (w.live) views.emplace_back(rank, w.view);
  }
  std::sort(views.begin(), views.end());
  return views;
}

void SspTracker::CountLive() {
  size_t live = 0;
  for (const auto& entry : workers_) live += entry.second.live ? 1 : 0;
  live_workers_.store(live, std::memory_order_relaxed);
}

void SspTracker::RestoreView(uint32_t rank, uint32_t view) {
  absl::MutexLock lock(&mu_);
  Worker w;
  w.view = view;
  w.next_clock = view + 1;
  workers_[rank] = std::move(w);
  CountLive();
}

void SspTracker::Expect(uint32_t rank) {
  absl::MutexLock lock(&mu_);
  if (workers_.find(rank) == workers_.end()) workers_[rank] = Worker();
  CountLive();
}

uint32_t SspTracker::Join(uint32_t rank, uint32_t resume_at) {
  std::vector<PullDone> ready;
  uint32_t clock;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(rank);
    const bool live = it != workers_.end() && it->second.live;
    if (live && it->second.view >= resume_at) {
      // A rejoin (a new connection after a transient loss) starts a new
      // push session: the worker counts its pushes afresh, so the open
      // clocks' counts go too (what was applied stays applied), and late
      // pushes of the old session no longer count.
      Worker& w = it->second;
      w.announced.clear();
      w.received.clear();
      w.applied.clear();
      w.next_clock = w.view + 1;
      ++w.session;
      return w.view;
    }
    uint32_t start = resume_at;
    if (!live && resume_at == 0) {
      start = MinClockLocked();
      if (start == std::numeric_limits<uint32_t>::max()) {
        // Nobody is live: continue from the highest view seen, else 0.
        start = 0;
        for (const auto& [r, w] : workers_) start = std::max(start, w.view);
      }
    }
    Worker w;
    w.view = start;
    w.next_clock = start + 1;
    if (it != workers_.end()) w.session = it->second.session + 1;
    workers_[rank] = std::move(w);
    CountLive();
    clock = start;
    TakeReady(&ready);
  }
  RunAll(ready, absl::OkStatus());
  return clock;
}

void SspTracker::Leave(uint32_t rank) {
  std::vector<PullDone> ready, orphaned;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(rank);
    if (it == workers_.end() || !it->second.live) return;
    it->second.live = false;
    CountLive();
    auto keep = parked_.begin();
    for (auto p = parked_.begin(); p != parked_.end(); ++p) {
      if (p->rank == rank) {
        orphaned.push_back(std::move(p->done));
      } else {
        if (keep != p) *keep = std::move(*p);
        ++keep;
      }
    }
    parked_.erase(keep, parked_.end());
    TakeReady(&ready);
  }
  RunAll(orphaned, absl::FailedPreconditionError(
                       absl::StrCat("worker ", rank, " left the job")));
  RunAll(ready, absl::OkStatus());
}

absl::StatusOr<uint64_t> SspTracker::ReceivePush(uint32_t rank, uint32_t clock) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(rank);
  if (it == workers_.end() || !it->second.live) {
    return absl::FailedPreconditionError(
        absl::StrCat("push from worker ", rank, ", which has not joined"));
  }
  Worker& w = it->second;
  if (clock < w.view || clock - w.view >= kMaxOpenClocks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "push from worker ", rank, " stamped ", clock, ", its open clocks are ",
        w.view, "..", w.view + kMaxOpenClocks - 1));
  }
  auto announced = w.announced.find(clock);
  uint32_t& received = w.received[clock];
  if (announced != w.announced.end() && received >= announced->second) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker ", rank, " pushed more than the ", announced->second,
        " pushes its CLOCK announced for clock ", clock));
  }
  ++received;
  return w.session;
}

void SspTracker::PushDropped(uint32_t rank, uint32_t clock, uint64_t session) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(rank);
  if (it == workers_.end() || it->second.session != session) return;
  auto received = it->second.received.find(clock);
  if (received != it->second.received.end() && received->second > 0) {
    --received->second;
  }
}

void SspTracker::PushApplied(uint32_t rank, uint32_t clock, uint64_t session) {
  std::vector<PullDone> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(rank);
    if (it == workers_.end() || it->second.session != session || clock < it->second.view) return;
    ++it->second.applied[clock];
    const uint32_t before = it->second.view;
    Advance(it->second);
    if (it->second.view != before) TakeReady(&ready);
  }
  RunAll(ready, absl::OkStatus());
}

absl::Status SspTracker::Clock(uint32_t rank, uint32_t clock, uint32_t pushes) {
  std::vector<PullDone> ready;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(rank);
    if (it == workers_.end() || !it->second.live) {
      return absl::FailedPreconditionError(
          absl::StrCat("CLOCK from worker ", rank, ", which has not joined"));
    }
    Worker& w = it->second;
    if (clock != w.next_clock) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker ", rank, " sent CLOCK(", clock, "), expected CLOCK(",
          w.next_clock, ")"));
    }
    const uint32_t closing = clock - 1;
    auto received = w.received.find(closing);
    const uint32_t got = received == w.received.end() ? 0 : received->second;
    if (got > pushes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "worker ", rank, " announced ", pushes, " pushes for clock ",
          closing, " but sent ", got));
    }
    w.announced[closing] = pushes;
    ++w.next_clock;
    const uint32_t before = w.view;
    Advance(w);
    if (w.view != before) TakeReady(&ready);
  }
  RunAll(ready, absl::OkStatus());
  return absl::OkStatus();
}

void SspTracker::Pull(uint32_t rank, uint32_t clock, absl::Time deadline,
                      PullDone done) {
  absl::Status status;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(rank);
    if (it == workers_.end() || !it->second.live) {
      status = absl::FailedPreconditionError(
          absl::StrCat("pull from worker ", rank, ", which has not joined"));
    } else if (!Ready(rank, clock)) {
      parked_.push_back(Parked{rank, clock, deadline, std::move(done)});
      return;
    }
  }
  done(status);
}

void SspTracker::Expire(absl::Time now) {
  std::vector<PullDone> expired;
  {
    absl::MutexLock lock(&mu_);
    auto keep = parked_.begin();
    for (auto p = parked_.begin(); p != parked_.end(); ++p) {
      if (p->deadline <= now) {
        expired.push_back(std::move(p->done));
      } else {
        if (keep != p) *keep = std::move(*p);
        ++keep;
      }
    }
    parked_.erase(keep, parked_.end());
  }
  RunAll(expired, absl::DeadlineExceededError(
                      "pull waited past its deadline for slower workers"));
}

uint32_t SspTracker::MinClock() const {
  absl::MutexLock lock(&mu_);
  return MinClockLocked();
}

uint32_t SspTracker::MaxClock() const {
  absl::MutexLock lock(&mu_);
  uint32_t max = 0;
  for (const auto& [rank, w] : workers_) {
    if (w.live) max = std::max(max, w.next_clock - 1);
  }
  return max;
}

absl::StatusOr<uint32_t> SspTracker::ViewOf(uint32_t rank) const {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(rank);
  if (it == workers_.end()) {
    return absl::NotFoundError(absl::StrCat("worker ", rank, " never joined"));
  }
  return it->second.view;
}

size_t SspTracker::parked() const {
  absl::MutexLock lock(&mu_);
  return parked_.size();
}

}  // namespace leeway
