// The server's apply threads. Tasks with the same key (a chunk) run one at
// a time, in the order they were submitted; tasks with different keys run
// in parallel on a fixed number of threads. A key whose next task came from
// SubmitIdle waits until no other key's next task came from Submit: work
// that can wait yields to the rest. Submit never blocks and never
// runs the task on the caller's thread, so the transport's progress thread
// can hand pushes over without waiting. The destructor runs every task
// already submitted, then joins. Thread-safe.
#ifndef LEEWAY_SERVER_APPLY_POOL_H_
#define LEEWAY_SERVER_APPLY_POOL_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace leeway {

class ApplyPool {
 public:
  // threads <= 0: one per hardware thread.
  explicit ApplyPool(int threads);
  ~ApplyPool();

  ApplyPool(const ApplyPool&) = delete;
  ApplyPool& operator=(const ApplyPool&) = delete;

  void Submit(uint64_t key, std::function<void()> task);
  // The same, for a task that can wait: it runs in its key's order, but
  // only when no thread has a Submit task to take.
  void SubmitIdle(uint64_t key, std::function<void()> task);
  // Waits until every task submitted so far has run.
  void Drain();
  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  struct Task {
    std::function<void()> run;
    bool idle = false;
  };
  struct KeyQueue {
    std::deque<Task> tasks;
    bool running = false;
  };
  void Add(uint64_t key, Task task);
  // Lists a key whose next task is ready to run.
  void MakeReady(uint64_t key, const KeyQueue& q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();

  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, KeyQueue> queues_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> ready_ ABSL_GUARDED_BY(mu_);       // keys whose next task waits
  std::deque<uint64_t> idle_ready_ ABSL_GUARDED_BY(mu_);  // the same, for idle tasks
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;          // submitted, not done
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_APPLY_POOL_H_
