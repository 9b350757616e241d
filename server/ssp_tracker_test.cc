#include "server/ssp_tracker.h"

#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Time kLater = absl::InfiniteFuture();

// Records how (and whether) a pull was answered.
struct Answer {
  bool called = false;
  absl::Status status;
  SspTracker::PullDone Callback() {
    return [this](absl::Status s) {
      REQUIRE_FALSE(called);
      called = true;
      status = s;
    };
  }
};

// One complete clock of worker `rank`: `pushes` pushes stamped clock-1,
// then CLOCK(clock, pushes).
void Iterate(SspTracker& t, uint32_t rank, uint32_t clock, uint32_t pushes = 1) {
  for (uint32_t i = 0; i < pushes; ++i) {
    auto session = t.ReceivePush(rank, clock - 1);
    REQUIRE(session.ok());
    t.PushApplied(rank, clock - 1, *session);
  }
  REQUIRE(t.Clock(rank, clock, pushes).ok());
}

TEST_CASE("the view advances only with the CLOCK and all its pushes") {
  SspTracker t(0);
  t.Join(0);
  const uint64_t session = *t.ReceivePush(0, 0);
  REQUIRE(t.ReceivePush(0, 0).ok());
  REQUIRE(t.Clock(0, 1, 2).ok());  // CLOCK before the pushes are applied
  CHECK(*t.ViewOf(0) == 0);
  t.PushApplied(0, 0, session);
  CHECK(*t.ViewOf(0) == 0);
  t.PushApplied(0, 0, session);
  CHECK(*t.ViewOf(0) == 1);
  // A push applied before its CLOCK arrives.
  REQUIRE(t.ReceivePush(0, 1).ok());
  t.PushApplied(0, 1, session);
  CHECK(*t.ViewOf(0) == 1);
  REQUIRE(t.Clock(0, 2, 1).ok());
  CHECK(*t.ViewOf(0) == 2);
  // A clock with no pushes at all.
  REQUIRE(t.Clock(0, 3, 0).ok());
  CHECK(*t.ViewOf(0) == 3);
}

TEST_CASE("bad clocks and stamps are refused and change nothing") {
  SspTracker t(1);
  t.Join(0);
  Iterate(t, 0, 1);
  CHECK_FALSE(t.Clock(0, 1, 0).ok());   // duplicated
  CHECK_FALSE(t.Clock(0, 0, 0).ok());   // backwards
  CHECK_FALSE(t.Clock(0, 3, 0).ok());   // skips CLOCK(2)
  CHECK_FALSE(t.ReceivePush(0, 0).ok());  // clock 0 is closed
  CHECK_FALSE(t.ReceivePush(0, 1 + SspTracker::kMaxOpenClocks).ok());
  REQUIRE(t.ReceivePush(0, 1).ok());
  REQUIRE(t.Clock(0, 2, 1).ok());
  CHECK_FALSE(t.ReceivePush(0, 1).ok());  // more than announced
  CHECK(t.Clock(0, 3, 0).ok());  // the sequence goes on
  // Announcing fewer pushes than were sent is refused.
  REQUIRE(t.ReceivePush(0, 3).ok());
  CHECK_FALSE(t.Clock(0, 4, 0).ok());
  // Strangers.
  CHECK(t.ReceivePush(7, 0).status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(t.Clock(7, 1, 0).code() == absl::StatusCode::kFailedPrecondition);
  Answer a;
  t.Pull(7, 0, kLater, a.Callback());
  CHECK(a.status.code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("BSP pulls wait for the slowest worker, then are answered") {
  SspTracker t(0);
  t.Join(0);
  t.Join(1);
  Iterate(t, 0, 1);
  Answer fast;
  t.Pull(0, 1, kLater, fast.Callback());
  CHECK_FALSE(fast.called);  // worker 1 is still at clock 0
  CHECK(t.parked() == 1);
  Iterate(t, 1, 1);
  CHECK(fast.called);
  CHECK(fast.status.ok());
  CHECK(t.parked() == 0);
}

TEST_CASE("a pull waits for its own pushes (read-my-writes)") {
  SspTracker t(5);
  t.Join(0);
  const uint64_t session = *t.ReceivePush(0, 0);
  REQUIRE(t.Clock(0, 1, 1).ok());
  Answer a;
  t.Pull(0, 1, kLater, a.Callback());
  CHECK_FALSE(a.called);
  t.PushApplied(0, 0, session);
  CHECK(a.called);
}

TEST_CASE("a rejoin starts a new push session; the old one's pushes count nowhere") {
  // The connection to a live server drops mid-clock (a saturated link's
  // keepalives time out); the worker reconnects and counts afresh.
  SspTracker t(0);
  t.Join(0);
  t.Join(1);
  Iterate(t, 0, 1, 3);
  const uint64_t old_session = *t.ReceivePush(0, 1);  // sent on the old connection
  REQUIRE(t.ReceivePush(0, 1).ok());                 // lost in flight
  CHECK(t.Join(0, 1) == 1);                            // reconnected: still at clock 1
  // The old session's push finishes applying after the rejoin: no count.
  t.PushApplied(0, 1, old_session);
  t.PushDropped(0, 1, old_session);
  // The new session sends its two pushes and announces two.
  const uint64_t session = *t.ReceivePush(0, 1);
  CHECK(session != old_session);
  REQUIRE(t.ReceivePush(0, 1).ok());
  REQUIRE(t.Clock(0, 2, 2).ok());
  CHECK(*t.ViewOf(0) == 1);  // neither new push applied yet
  t.PushApplied(0, 1, session);
  t.PushApplied(0, 1, session);
  CHECK(*t.ViewOf(0) == 2);
  // And CLOCK follows the new sequence.
  CHECK_FALSE(t.Clock(0, 2, 0).ok());
  CHECK(t.Clock(0, 3, 0).ok());
}

TEST_CASE("staleness s lets the fast worker run s clocks ahead") {
  SspTracker t(2);
  t.Join(0);
  t.Join(1);
  for (uint32_t c = 1; c <= 2; ++c) {
    Iterate(t, 0, c);
    Answer a;
    t.Pull(0, c, kLater, a.Callback());
    CHECK(a.called);  // min_clock 0 >= c - 2: no wait
  }
  Iterate(t, 0, 3);
  Answer third;
  t.Pull(0, 3, kLater, third.Callback());
  CHECK_FALSE(third.called);
  Iterate(t, 1, 1);
  CHECK(third.called);
}

TEST_CASE("async pulls never wait") {
  SspTracker t(SspTracker::kAsync);
  t.Join(0);
  t.Join(1);
  for (uint32_t c = 1; c <= 50; ++c) {
    REQUIRE(t.Clock(0, c, 0).ok());
    Answer a;
    t.Pull(0, c, kLater, a.Callback());
    CHECK(a.called);
  }
}

TEST_CASE("a dead worker releases the others' parked pulls") {
  SspTracker t(0);
  t.Join(0);
  t.Join(1);
  t.Join(2);
  Iterate(t, 0, 1);
  Iterate(t, 1, 1);
  Answer a, b, c;
  t.Pull(0, 1, kLater, a.Callback());
  t.Pull(1, 1, kLater, b.Callback());
  REQUIRE(t.Clock(2, 1, 1).ok());  // worker 2's push never comes
  t.Pull(2, 1, kLater, c.Callback());
  CHECK(t.parked() == 3);
  t.Leave(2);
  CHECK(a.called);
  CHECK(a.status.ok());
  CHECK(b.status.ok());
  CHECK(c.called);
  CHECK(c.status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(t.MinClock() == 1);
  // It rejoins at the current min_clock.
  CHECK(t.Join(2) == 1);
  CHECK(t.MinClock() == 1);
}

TEST_CASE("workers resume at their own clocks after a restore from a checkpoint") {
  // The checkpoint had both workers at clock 3; they had gone on to 7 and 6.
  SspTracker t(1);
  t.RestoreView(0, 3);
  t.RestoreView(1, 3);
  CHECK(t.Join(0, 7) == 7);
  Answer a;
  t.Pull(0, 7, kLater, a.Callback());
  CHECK_FALSE(a.called);  // worker 1 is still at 3 here
  CHECK(t.Join(1, 6) == 6);
  CHECK(a.called);  // 6 + 1 >= 7
  CHECK(a.status.ok());
  // The next CLOCK is the one after the resumed clock; old ones are refused.
  CHECK(t.Clock(0, 5, 0).code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(t.Clock(0, 8, 0).ok());
  CHECK(*t.ViewOf(0) == 8);
  // Never backwards: a stale resume keeps the view; a plain join too.
  CHECK(t.Join(0, 2) == 8);
  CHECK(t.Join(0) == 8);
  // A worker the restored server never saw resumes at its clock, not at
  // min_clock.
  CHECK(t.Join(2, 5) == 5);
  CHECK(t.MinClock() == 5);
}

TEST_CASE("parked pulls expire with DEADLINE_EXCEEDED") {
  SspTracker t(0);
  t.Join(0);
  t.Join(1);
  Iterate(t, 0, 1);
  const absl::Time now = absl::Now();
  Answer early, late;
  t.Pull(0, 1, now + absl::Seconds(1), early.Callback());
  t.Pull(0, 1, now + absl::Seconds(10), late.Callback());
  t.Expire(now + absl::Seconds(2));
  CHECK(early.status.code() == absl::StatusCode::kDeadlineExceeded);
  CHECK_FALSE(late.called);
  CHECK(t.parked() == 1);
  Iterate(t, 1, 1);
  CHECK(late.status.ok());
}

TEST_CASE("expected workers hold the others back before they join") {
  SspTracker t(0);
  t.Expect(0);
  t.Expect(1);
  CHECK(t.Join(0) == 0);
  Iterate(t, 0, 1);
  Answer a;
  t.Pull(0, 1, kLater, a.Callback());
  CHECK_FALSE(a.called);  // worker 1 has not even joined: it is at clock 0
  CHECK(t.Join(1) == 0);
  Iterate(t, 1, 1);
  CHECK(a.called);
}

TEST_CASE("live workers count the expected, the joined, not the departed") {
  SspTracker t(0);
  CHECK(t.LiveWorkers() == 0);
  t.Expect(0);
  t.Expect(1);
  CHECK(t.LiveWorkers() == 2);
  t.Join(0);
  t.Join(2);
  CHECK(t.LiveWorkers() == 3);
  t.Leave(1);
  CHECK(t.LiveWorkers() == 2);
  t.Join(1);
  CHECK(t.LiveWorkers() == 3);
}

TEST_CASE("min and max clocks") {
  SspTracker t(3);
  CHECK(t.MinClock() == std::numeric_limits<uint32_t>::max());
  t.Join(0);
  t.Join(1);
  Iterate(t, 0, 1);
  Iterate(t, 0, 2);
  CHECK(t.MinClock() == 0);
  CHECK(t.MaxClock() == 2);
  CHECK_FALSE(t.ViewOf(9).ok());
}

}  // namespace
}  // namespace leeway
