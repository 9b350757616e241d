#include "kernels/parallel_for.h"

#include <atomic>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("ParallelFor covers every index once, in grain-aligned blocks") {
  for (size_t n : {size_t{1}, size_t{5}, size_t{1000}, size_t{100003}}) {
    for (size_t grain : {size_t{1}, size_t{8}, size_t{512}}) {
      for (int threads : {1, 2, 0}) {
        // Catch2's assertions are not thread-safe: blocks only record.
        std::vector<std::atomic<int>> hits(n);
        std::atomic<bool> bad_block{false};
        ParallelFor(n, grain, threads, [&](size_t begin, size_t end) {
          if (begin % grain != 0 || begin >= end || end > n) bad_block = true;
          for (size_t i = begin; i < end && i < n; ++i) hits[i]++;
        });
        CHECK_FALSE(bad_block.load());
        for (size_t i = 0; i < n; ++i) REQUIRE(hits[i].load() == 1);
      }
    }
  }
}

TEST_CASE("ParallelFor with nothing to do calls nothing") {
  bool called = false;
  ParallelFor(0, 16, 0, [&](size_t, size_t) { called = true; });
  CHECK_FALSE(called);
}

TEST_CASE("ParallelFor completes nested and concurrent calls") {
  // Callers claim blocks themselves, so nesting and many callers at once
  // finish even with every pool thread busy.
  std::atomic<long> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      ParallelFor(64, 1, 0, [&](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) {
          ParallelFor(100, 10, 0, [&](size_t b, size_t e) {
            total += static_cast<long>(e - b);
          });
        }
      });
    });
  }
  for (auto& t : callers) t.join();
  CHECK(total.load() == 4 * 64 * 100);
}

TEST_CASE("KernelThreads is at least one") { CHECK(KernelThreads() >= 1); }

}  // namespace
}  // namespace leeway
