#include "server/apply_pool.h"

#include <atomic>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("tasks of one key run in order, one at a time") {
  ApplyPool pool(4);
  absl::Mutex mu;
  std::map<uint64_t, std::vector<int>> seen;
  std::map<uint64_t, std::atomic<int>> running;
  for (uint64_t key = 0; key < 8; ++key) running[key] = 0;
  std::atomic<bool> overlap{false};
  for (int i = 0; i < 2000; ++i) {
    const uint64_t key = i % 8;
    pool.Submit(key, [&, key, i] {
      if (running[key].fetch_add(1) != 0) overlap = true;
      {
        absl::MutexLock lock(&mu);
        seen[key].push_back(i);
      }
      running[key].fetch_sub(1);
    });
  }
  pool.Drain();
  CHECK_FALSE(overlap.load());
  for (const auto& [key, order] : seen) {
    REQUIRE(order.size() == 250);
    for (size_t j = 1; j < order.size(); ++j) CHECK(order[j] == order[j - 1] + 8);
  }
}

TEST_CASE("different keys run in parallel") {
  ApplyPool pool(2);
  // Two tasks that each wait for the other: only parallel threads finish.
  std::atomic<int> arrived{0};
  for (uint64_t key : {1, 2}) {
    pool.Submit(key, [&] {
      arrived.fetch_add(1);
      while (arrived.load() < 2) std::this_thread::yield();
    });
  }
  pool.Drain();
  CHECK(arrived.load() == 2);
}

TEST_CASE("idle tasks wait for the other keys' tasks, and keep their key's order") {
  ApplyPool pool(1);
  absl::Mutex mu;
  std::vector<std::string> order;
  auto record = [&](std::string what) {
    return [&, what] {
      absl::MutexLock lock(&mu);
      order.push_back(what);
    };
  };
  std::atomic<bool> release{false};
  pool.Submit(0, [&] {  // holds the only thread while the rest queue
    while (!release.load()) std::this_thread::yield();
  });
  pool.SubmitIdle(1, record("idle 1"));
  pool.Submit(2, record("push 2"));
  pool.SubmitIdle(3, record("idle 3"));
  pool.Submit(3, record("push 3"));  // behind its key's idle task
  pool.Submit(4, record("push 4"));
  release = true;
  pool.Drain();
  CHECK(order == std::vector<std::string>{"push 2", "push 4", "idle 1", "idle 3", "push 3"});
}

TEST_CASE("the destructor runs what was submitted") {
  std::atomic<int> ran{0};
  {
    ApplyPool pool(1);
    for (int i = 0; i < 100; ++i) pool.Submit(i, [&] { ran.fetch_add(1); });
  }
  CHECK(ran.load() == 100);
}

}  // namespace
}  // namespace leeway
