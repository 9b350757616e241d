#include "worker/pull_batch_sizer.h"

#include "catch2/catch.hpp"

namespace leeway {
namespace {

constexpr uint64_t kMiB = 1 << 20;

TEST_CASE("the first pull offered is always taken") {
  PullBatchSizer sizer(4 * kMiB);
  CHECK(sizer.Take(3, 64 * kMiB, std::nullopt));  // over both limits, alone
  CHECK_FALSE(sizer.Take(3, 1, uint64_t{8}));
  CHECK(sizer.entries() == 1);
}

TEST_CASE("a limit of 0 sends every pull alone") {
  PullBatchSizer sizer(0);
  CHECK(sizer.Take(1, 1, uint64_t{0}));
  CHECK_FALSE(sizer.Take(1, 1, uint64_t{0}));  // even a not-modified reply
}

TEST_CASE("a batch holds one clock's pulls") {
  PullBatchSizer sizer(4 * kMiB);
  CHECK(sizer.Take(5, 10, std::nullopt));
  CHECK(sizer.Take(5, 10, std::nullopt));
  CHECK_FALSE(sizer.Take(6, 10, std::nullopt));
  CHECK(sizer.entries() == 2);
}

TEST_CASE("replies are expected as large as the chunk's last one, or dense before it") {
  PullBatchSizer dense(4 * kMiB);
  // 1 MiB chunks (256 Ki floats) never pulled: four fit, as fp32.
  for (int i = 0; i < 4; ++i) CHECK(dense.Take(0, 256 * 1024, std::nullopt));
  CHECK_FALSE(dense.Take(0, 256 * 1024, std::nullopt));
  // The same chunks whose last replies took 40 KiB: the fp32 bound (16
  // MiB) takes over.
  PullBatchSizer sparse(4 * kMiB);
  for (int i = 0; i < 16; ++i) CHECK(sparse.Take(0, 256 * 1024, uint64_t{40 * 1024}));
  CHECK_FALSE(sparse.Take(0, 256 * 1024, uint64_t{40 * 1024}));
  CHECK(sparse.entries() == 16);
}

TEST_CASE("a batch holds at most 32 pulls") {
  PullBatchSizer sizer(4 * kMiB);
  for (size_t i = 0; i < PullBatchSizer::kMaxEntries; ++i) CHECK(sizer.Take(0, 16, uint64_t{0}));
  CHECK_FALSE(sizer.Take(0, 16, uint64_t{0}));
}

TEST_CASE("a large expected reply ends the batch before it") {
  PullBatchSizer sizer(4 * kMiB);
  CHECK(sizer.Take(0, 1024, uint64_t{3 * kMiB}));
  CHECK_FALSE(sizer.Take(0, 1024, uint64_t{2 * kMiB}));  // 5 MiB expected
  CHECK(sizer.Take(0, 1024, uint64_t{kMiB}));            // exactly 4 MiB
}

}  // namespace
}  // namespace leeway
