#include "kernels/parallel_for.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "core/common/thread_name.h"

namespace leeway {
namespace {

// One ParallelFor call: blocks are claimed through `next`.
struct Job {
  std::function<void(size_t, size_t)> fn;
  size_t n = 0;
  size_t block = 0;
  size_t blocks = 0;
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::condition_variable all_done;
  size_t done = 0;  // guarded by mu

  // Runs unclaimed blocks until none is left.
  void Drain() {
    size_t finished = 0;
    for (size_t b; (b = next.fetch_add(1)) < blocks; ++finished) {
      const size_t begin = b * block;
      fn(begin, std::min(n, begin + block));
    }
    if (finished == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    done += finished;
    if (done == blocks) all_done.notify_all();
  }
};

class Pool {
 public:
  explicit Pool(int threads) {
    for (int i = 0; i < threads; ++i) {
      workers_.emplace_back([this] {
        NameThisThread("lw-kernel");
        Loop();
      });
    }
  }
  // The pool lives for the whole process (never destroyed: kernels may run
  // from static destructors of other units).
  void Offer(const std::shared_ptr<Job>& job, int helpers) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int i = 0; i < helpers; ++i) queue_.push_back(job);
    }
    if (helpers == 1) {
      ready_.notify_one();
    } else {
      ready_.notify_all();
    }
  }
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void Loop() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [this] { return !queue_.empty(); });
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->Drain();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> workers_;
};

int ConfiguredThreads() {
  int threads = static_cast<int>(std::thread::hardware_concurrency());
  if (const char* env = std::getenv("LEEWAY_KERNEL_THREADS")) {
    int value = 0;
    if (absl::SimpleAtoi(env, &value) && value > 0) threads = value;
  }
  return std::max(1, std::min(threads, 256));
}

Pool& SharedPool() {
  static Pool* const pool = new Pool(ConfiguredThreads() - 1);
  return *pool;
}

}  // namespace

int KernelThreads() {
  static const int threads = ConfiguredThreads();
  return threads;
}

void ParallelFor(size_t n, size_t grain, int threads,
                 const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  grain = std::max<size_t>(grain, 1);
  if (threads <= 0 || threads > KernelThreads()) threads = KernelThreads();
  const size_t grains = (n + grain - 1) / grain;
  // A few blocks per thread balance uneven progress without much overhead.
  const size_t blocks = std::min<size_t>(grains, size_t(threads) * 4);
  if (threads == 1 || blocks <= 1) {
    fn(0, n);
    return;
  }
  auto job = std::make_shared<Job>();
  job->fn = fn;
  job->n = n;
  job->block = (grains + blocks - 1) / blocks * grain;
  job->blocks = (n + job->block - 1) / job->block;
  const int helpers =
      static_cast<int>(std::min<size_t>(threads - 1, job->blocks - 1));
  SharedPool().Offer(job, helpers);
  job->Drain();
  std::unique_lock<std::mutex> lock(job->mu);
  job->all_done.wait(lock, [&] { return job->done == job->blocks; });
}

}  // namespace leeway
