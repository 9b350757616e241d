#include "server/apply_pool.h"

#include <atomic>
#include <map>
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
