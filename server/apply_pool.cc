#include "server/apply_pool.h"

#include <utility>

#include "core/common/thread_name.h"

namespace leeway {

ApplyPool::ApplyPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  for (int i = 0; i < threads; ++i)
    threads_.emplace_back([this] {
      NameThisThread("lw-apply");
      Loop();
    });
}

ApplyPool::~ApplyPool() {
  Drain();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (auto& t : threads_) t.join();
}

void ApplyPool::Submit(uint64_t key, std::function<void()> task) {
  Add(key, Task{std::move(task), false});
}

void ApplyPool::SubmitIdle(uint64_t key, std::function<void()> task) {
  Add(key, Task{std::move(task), true});
}

void ApplyPool::Add(uint64_t key, Task task) {
  absl::MutexLock lock(&mu_);
  KeyQueue& q = queues_[key];
  q.tasks.push_back(std::move(task));
  ++pending_;
  if (q.tasks.size() == 1 && !q.running) MakeReady(key, q);
}

void ApplyPool::MakeReady(uint64_t key, const KeyQueue& q) {
  (q.tasks.front().idle ? idle_ready_ : ready_).push_back(key);
}

void ApplyPool::Drain() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](size_t* pending) { return *pending == 0; }, &pending_));
}

void ApplyPool::Loop() {
  for (;;) {
    uint64_t key;
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](ApplyPool* p) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return p->stopping_ || !p->ready_.empty() || !p->idle_ready_.empty();
          },
          this));
      std::deque<uint64_t>& from = ready_.empty() ? idle_ready_ : ready_;
      if (from.empty()) return;  // stopping, nothing left
      key = from.front();
      from.pop_front();
      KeyQueue& q = queues_[key];
      task = std::move(q.tasks.front().run);
      q.tasks.pop_front();
      q.running = true;
    }
    task();
    absl::MutexLock lock(&mu_);
    KeyQueue& q = queues_[key];
    q.running = false;
    if (!q.tasks.empty()) {
      MakeReady(key, q);
    } else {
      queues_.erase(key);
    }
    --pending_;
  }
}

}  // namespace leeway
