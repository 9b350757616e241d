#include "core/transport/worker_lock.h"

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("a held worker lock refuses try_lock until it is released") {
  WorkerLock lock;
  REQUIRE(lock.try_lock());
  CHECK_FALSE(lock.try_lock());
  bool other_thread_got_it = true;
  std::thread([&] { other_thread_got_it = lock.try_lock(); }).join();
  CHECK_FALSE(other_thread_got_it);
  lock.unlock();
  CHECK(lock.try_lock());
  lock.unlock();
}

TEST_CASE("the worker lock excludes: every increment under it counts") {
  // A plain counter: lost updates (or, under TSan, a race report) if two
  // holders overlapped or a holder's writes were not seen by the next.
  WorkerLock lock;
  uint64_t counter = 0;
  constexpr int kThreads = 4;
  constexpr int kRounds = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        if (t % 2 == 0) {
          std::lock_guard<WorkerLock> hold(lock);
          ++counter;
        } else {
          while (!lock.try_lock()) CpuPause();
          ++counter;
          lock.unlock();
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(counter == uint64_t{kThreads} * kRounds);
}

TEST_CASE("lock() waits out a holder, however long it holds") {
  WorkerLock lock;
  lock.lock();
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    lock.lock();  // past its spins and yields: it naps
    acquired.store(true);
    lock.unlock();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK_FALSE(acquired.load());
  lock.unlock();
  waiter.join();
  CHECK(acquired.load());
}

TEST_CASE("BumpUnderLock adds to a counter others may read") {
  std::atomic<uint64_t> counter{5};
  BumpUnderLock(counter, 1);
  BumpUnderLock(counter, 4096);
  CHECK(counter.load() == 4102);
}

}  // namespace
}  // namespace leeway
