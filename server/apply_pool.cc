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
  absl::MutexLock lock(&mu_);
  KeyQueue& q = queues_[key];
  q.tasks.push_back(std::move(task));
  ++pending_;
  if (q.tasks.size() == 1 && !q.running) ready_.push_back(key);
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
            return p->stopping_ || !p->ready_.empty();
          },
          this));
      if (ready_.empty()) return;  // stopping, nothing left
      key = ready_.front();
      ready_.pop_front();
      KeyQueue& q = queues_[key];
      task = std::move(q.tasks.front());
      q.tasks.pop_front();
      q.running = true;
    }
    task();
    absl::MutexLock lock(&mu_);
    KeyQueue& q = queues_[key];
    q.running = false;
    if (!q.tasks.empty()) {
      ready_.push_back(key);
    } else {
      queues_.erase(key);
    }
    --pending_;
  }
}

}  // namespace leeway
