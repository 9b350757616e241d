// StallDetector: tells a progress thread that UCX keeps saying events are
// pending (arming the worker fails with UCS_ERR_BUSY) while progress finds
// none, so that it naps between polls instead of spinning a core forever.
//
// That is the state a stopped shared-memory FIFO leaves in UCX 1.13: a
// sender killed between reserving a slot in the receiver's FIFO and
// publishing it leaves the FIFO's head ahead of what can ever be read, so
// the receiver's arm always reports data and its progress never finds any
// (README, data plane; tests/shm_wedge_peer). Stalled: for a whole window,
// no arm succeeded, at least kMinPhantoms busy arms were followed by a
// progress round without events, and, while the process has shared-memory
// peers, not one message came from any of them. One arm that succeeds, or
// one shared-memory message, ends the stall at once. A busy arm that
// progress then serves (the normal race with an arriving message) is not a
// phantom.
//
// Busy arms and phantoms alone are no evidence: under heavy traffic UCX
// reports events pending on nearly every arm while transfers are under
// way (a study run measured 90,000-260,000 phantoms a second, many seconds
// with no arm succeeding, while messages kept coming), which took healthy
// servers for stalled. Shared-memory peers are never silent for long while
// the FIFO works (their keepalives come every quarter of the peer timeout;
// the window must be longer), so their silence is the evidence. A process
// without shared-memory peers is never stalled: only a shared-memory
// sender can stop the FIFO, and its own messages never arrive.
//
// Not thread-safe: the worker lock (progress_loop.h) guards it.
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

  // A message arrived from a shared-memory peer.
  void OnSharedMemoryMessage() {
    shared_memory_heard_ = true;
    stalled_ = false;
  }

  // Closes the window when it is over; returns stalled().
  // `shared_memory_peers`: whether the process has any now. A stall starts
  // only while it has them; it lasts (the peers it silenced are soon lost)
  // until an arm succeeds or a shared-memory message comes.
  bool OnClock(absl::Time now, bool shared_memory_peers) {
    if (now - window_start_ < window_) return stalled_;
    const bool phantom_window = !arm_succeeded_ && phantoms_ >= kMinPhantoms;
    stalled_ = phantom_window &&
               (stalled_ || (shared_memory_peers && !shared_memory_heard_));
    window_start_ = now;
    phantoms_ = 0;
    arm_succeeded_ = false;
    shared_memory_heard_ = false;
    return stalled_;
  }

  bool stalled() const { return stalled_; }

 private:
  const absl::Duration window_;
  absl::Time window_start_;
  uint64_t phantoms_ = 0;
  bool arm_succeeded_ = false;
  bool shared_memory_heard_ = false;
  bool awaiting_progress_ = false;
  bool stalled_ = false;
};

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_STALL_DETECTOR_H_
