// SpinPolicy: how long a progress thread polls after an event before it
// sleeps. `busy_poll` while the idle gaps that events end are short enough
// for polling to catch them; none once kMisses gaps in a row outlasted
// `busy_poll` (each caught only by a thread that slept); `busy_poll` again
// after one short gap. The streak keeps a stray slow gap (a preempted
// sender) from stopping the polls that a stream of messages needs.
// Not thread-safe: it belongs to the progress thread.
#ifndef LEEWAY_CORE_TRANSPORT_SPIN_POLICY_H_
#define LEEWAY_CORE_TRANSPORT_SPIN_POLICY_H_

#include <algorithm>

#include "absl/time/time.h"

namespace leeway {

class SpinPolicy {
 public:
  static constexpr int kMisses = 8;

  explicit SpinPolicy(absl::Duration busy_poll) : busy_poll_(busy_poll) {}

  // An idle gap of `gap` ended with an event.
  void OnGap(absl::Duration gap) {
    misses_ = gap <= busy_poll_ ? 0 : std::min(misses_ + 1, kMisses);
  }

  absl::Duration spin() const {
    return misses_ >= kMisses ? absl::ZeroDuration() : busy_poll_;
  }

 private:
  const absl::Duration busy_poll_;
  int misses_ = 0;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_SPIN_POLICY_H_
