#include "core/common/wall_clock.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("WallNow reads the clock absl::Now reads") {
  const absl::Time before = absl::Now();
  const absl::Time wall = WallNow();
  const absl::Time after = absl::Now();
  // The two clocks may disagree by the cycle clock's calibration error:
  // far below a millisecond.
  CHECK(wall >= before - absl::Milliseconds(1));
  CHECK(wall <= after + absl::Milliseconds(1));
}

TEST_CASE("WallNow moves forward") {
  const absl::Time first = WallNow();
  absl::SleepFor(absl::Milliseconds(2));
  CHECK(WallNow() - first >= absl::Milliseconds(1));
}

}  // namespace
}  // namespace leeway
