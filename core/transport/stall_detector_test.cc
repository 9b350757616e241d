#include "core/transport/stall_detector.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);
const absl::Duration kWindow = absl::Seconds(1);

// `n` busy arms, each followed by a progress round that finds `events`.
void BusyArms(StallDetector& d, uint64_t n, bool events) {
  for (uint64_t i = 0; i < n; ++i) {
    d.OnArm(/*busy=*/true);
    d.OnProgress(events);
  }
}

TEST_CASE("busy arms that progress never serves, for a window, are a stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 1000, /*events=*/false);
  CHECK_FALSE(d.OnClock(kStart + absl::Milliseconds(999)));  // window not over
  CHECK(d.OnClock(kStart + kWindow));
  CHECK(d.stalled());
  // It stays stalled while the phantoms go on.
  BusyArms(d, StallDetector::kMinPhantoms, false);
  CHECK(d.OnClock(kStart + 2 * kWindow));
}

TEST_CASE("busy arms that progress serves are the normal race, not a stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 100000, /*events=*/true);
  CHECK_FALSE(d.OnClock(kStart + kWindow));
}

TEST_CASE("a few phantoms, or one arm that succeeds, are no stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, StallDetector::kMinPhantoms - 1, false);
  CHECK_FALSE(d.OnClock(kStart + kWindow));
  BusyArms(d, 1000, false);
  d.OnArm(/*busy=*/false);
  CHECK_FALSE(d.OnClock(kStart + 2 * kWindow));
}

TEST_CASE("one arm that succeeds ends a stall at once") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 1000, false);
  REQUIRE(d.OnClock(kStart + kWindow));
  d.OnArm(/*busy=*/false);
  CHECK_FALSE(d.stalled());
  // A progress round without a busy arm before it is no phantom.
  for (int i = 0; i < 1000; ++i) d.OnProgress(false);
  CHECK_FALSE(d.OnClock(kStart + 2 * kWindow));
}

}  // namespace
}  // namespace leeway
