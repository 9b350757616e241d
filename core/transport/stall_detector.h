// StallDetector: tells a progress thread that UCX keeps saying events are
// pending (arming the worker fails with UCS_ERR_BUSY) while progress finds
// none, so that it naps between polls instead of spinning a core forever.
//
// That is the state a stopped shared-memory FIFO leaves in UCX 1.13: a
// sender killed between reserving a slot in the receiver's FIFO and
// publishing it leaves the FIFO's head ahead of what can ever be read, so
// the receiver's arm always reports data and its progress never finds any
// (README, data plane; tests/shm_wedge_peer). Stalled: for a whole window,
// no arm succeeded and at least kMinPhantoms busy arms were followed by a
// progress round without events. One arm that succeeds ends the stall at
// once. A busy arm that progress then serves (the normal race with an
// arriving message) is not a phantom.
//
// Not thread-safe: it belongs to the progress thread.
#ifndef LEEWAY_CORE_TRANSPORT_STALL_DETECTOR_H_
#define LEEWAY_CORE_TRANSPORT_STALL_DETECTOR_H_

#include <cstdint>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace leeway {

class StallDetector {
 public:
  static constexpr uint64_t kMinPhantoms = 64;

  explicit StallDetector(absl::Duration window,
                         absl::Time start = absl::Now())
      : window_(window), window_start_(start) {}

  // Arming the worker returned UCS_ERR_BUSY (`busy`) or UCS_OK.
  void OnArm(bool busy) {
    if (busy) {
      awaiting_progress_ = true;
    } else {
      arm_succeeded_ = true;
      stalled_ = false;
    }
  }

  // A progress round found UCX events (`events`) or none.
  void OnProgress(bool events) {
    if (awaiting_progress_ && !events) ++phantoms_;
    awaiting_progress_ = false;
  }

  // Closes the window when it is over; returns stalled().
  bool OnClock(absl::Time now) {
    if (now - window_start_ < window_) return stalled_;
    stalled_ = !arm_succeeded_ && phantoms_ >= kMinPhantoms;
    window_start_ = now;
    phantoms_ = 0;
    arm_succeeded_ = false;
    return stalled_;
  }

  bool stalled() const { return stalled_; }

 private:
  const absl::Duration window_;
  absl::Time window_start_;
  uint64_t phantoms_ = 0;
  bool arm_succeeded_ = false;
  bool awaiting_progress_ = false;
  bool stalled_ = false;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_STALL_DETECTOR_H_
