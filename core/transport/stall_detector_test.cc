#include "core/transport/stall_detector.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Time kStart = absl::FromUnixSeconds(1000);
const absl::Duration kWindow = absl::Seconds(1);
constexpr bool kShm = true;  // the process has shared-memory peers

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
  CHECK_FALSE(d.OnClock(kStart + absl::Milliseconds(999), kShm));  // window not over
  CHECK(d.OnClock(kStart + kWindow, kShm));
  CHECK(d.stalled());
  // It stays stalled while the phantoms go on.
  BusyArms(d, StallDetector::kMinPhantoms, false);
  CHECK(d.OnClock(kStart + 2 * kWindow, kShm));
}

TEST_CASE("busy arms that progress serves are the normal race, not a stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 100000, /*events=*/true);
  CHECK_FALSE(d.OnClock(kStart + kWindow, kShm));
}

TEST_CASE("a few phantoms, or one arm that succeeds, are no stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, StallDetector::kMinPhantoms - 1, false);
  CHECK_FALSE(d.OnClock(kStart + kWindow, kShm));
  BusyArms(d, 1000, false);
  d.OnArm(/*busy=*/false);
  CHECK_FALSE(d.OnClock(kStart + 2 * kWindow, kShm));
}

TEST_CASE("one arm that succeeds ends a stall at once") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 1000, false);
  REQUIRE(d.OnClock(kStart + kWindow, kShm));
  d.OnArm(/*busy=*/false);
  CHECK_FALSE(d.stalled());
  // A progress round without a busy arm before it is no phantom.
  for (int i = 0; i < 1000; ++i) d.OnProgress(false);
  CHECK_FALSE(d.OnClock(kStart + 2 * kWindow, kShm));
}

TEST_CASE("phantoms while shared-memory peers are heard are heavy traffic, not a stall") {
  // What a study run's servers saw: ~100,000 phantoms a second and no arm
  // succeeding for seconds, while messages kept coming.
  StallDetector d(kWindow, kStart);
  BusyArms(d, 100000, /*events=*/false);
  d.OnSharedMemoryMessage();
  BusyArms(d, 100000, /*events=*/false);
  CHECK_FALSE(d.OnClock(kStart + kWindow, kShm));
}

TEST_CASE("without shared-memory peers there is no stall") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 100000, /*events=*/false);
  CHECK_FALSE(d.OnClock(kStart + kWindow, /*shared_memory_peers=*/false));
}

TEST_CASE("a stall outlasts the shared-memory peers it silenced") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 1000, false);
  REQUIRE(d.OnClock(kStart + kWindow, kShm));
  // They are lost (peer timeout); the FIFO is still stopped.
  BusyArms(d, 1000, false);
  CHECK(d.OnClock(kStart + 2 * kWindow, /*shared_memory_peers=*/false));
}

TEST_CASE("a shared-memory message ends a stall at once") {
  StallDetector d(kWindow, kStart);
  BusyArms(d, 1000, false);
  REQUIRE(d.OnClock(kStart + kWindow, kShm));
  d.OnSharedMemoryMessage();
  CHECK_FALSE(d.stalled());
  BusyArms(d, 1000, false);
  CHECK_FALSE(d.OnClock(kStart + 2 * kWindow, kShm));  // heard in this window
  BusyArms(d, 1000, false);
  CHECK(d.OnClock(kStart + 3 * kWindow, kShm));  // silent again for a window
}

}  // namespace
}  // namespace leeway
