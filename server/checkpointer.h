// Checkpoints a running ServerCore: every `interval` on a thread of its
// own, on request (WriteNow, for the admin API and for SIGTERM), and
// restores the newest complete checkpoint at start.
//
// A checkpoint captures each chunk under its own lock (chunks may differ by
// the pushes applied while it is taken; each chunk is consistent) and the
// workers' clock views. Restoring declares the chunks, restores their
// state and moves every chunk's version forward by kRestartVersionStep, so
// that no worker copy from the lost history after the checkpoint can
// match a version the restarted server hands out.
#ifndef LEEWAY_SERVER_CHECKPOINTER_H_
#define LEEWAY_SERVER_CHECKPOINTER_H_

#include <memory>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/checkpoint.h"
#include "server/server_core.h"

namespace leeway {

constexpr uint64_t kRestartVersionStep = uint64_t{1} << 40;

class Checkpointer {
 public:
  Checkpointer(ServerCore* core, std::unique_ptr<CheckpointStore> store,
               absl::Duration interval);
  ~Checkpointer();  // stops the thread (without a final checkpoint)

  // Restores the newest complete checkpoint into the core; NOT_FOUND when
  // there is none (a fresh start).
  absl::Status RestoreNewest();
  // Starts the periodic thread (interval > 0).
  void Start();
  // Writes one checkpoint now; returns its sequence number.
  absl::StatusOr<uint64_t> WriteNow();

 private:
  ServerCore* const core_;
  std::unique_ptr<CheckpointStore> store_;
  const absl::Duration interval_;
  absl::Mutex write_mu_;  // one writer at a time
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_CHECKPOINTER_H_
