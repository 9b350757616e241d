#include "core/transport/spin_policy.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

const absl::Duration kBusyPoll = absl::Microseconds(50);

TEST_CASE("polls after events until gaps outlast the poll kMisses times in a row") {
  SpinPolicy policy(kBusyPoll);
  CHECK(policy.spin() == kBusyPoll);
  for (int i = 0; i < SpinPolicy::kMisses - 1; ++i) {
    policy.OnGap(absl::Microseconds(400));
    CHECK(policy.spin() == kBusyPoll);
  }
  policy.OnGap(absl::Microseconds(400));
  CHECK(policy.spin() == absl::ZeroDuration());
  policy.OnGap(absl::Milliseconds(3));  // more misses change nothing
  CHECK(policy.spin() == absl::ZeroDuration());
}

TEST_CASE("one gap short enough to catch brings the poll back") {
  SpinPolicy policy(kBusyPoll);
  for (int i = 0; i < SpinPolicy::kMisses; ++i) policy.OnGap(absl::Seconds(1));
  REQUIRE(policy.spin() == absl::ZeroDuration());
  policy.OnGap(kBusyPoll);  // exactly busy_poll: polling would have caught it
  CHECK(policy.spin() == kBusyPoll);
}

TEST_CASE("a short gap restarts the streak of misses") {
  SpinPolicy policy(kBusyPoll);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < SpinPolicy::kMisses - 1; ++i) {
      policy.OnGap(absl::Microseconds(51));
    }
    policy.OnGap(absl::Microseconds(2));
    CHECK(policy.spin() == kBusyPoll);
  }
}

TEST_CASE("a zero busy_poll never polls") {
  SpinPolicy policy(absl::ZeroDuration());
  CHECK(policy.spin() == absl::ZeroDuration());
  policy.OnGap(absl::ZeroDuration());
  CHECK(policy.spin() == absl::ZeroDuration());
}

}  // namespace
}  // namespace leeway
