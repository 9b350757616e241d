#include "kernels/indexed_prefetch.h"

#include <random>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

std::vector<float> PlainScatter(const std::vector<uint32_t>& indices,
                                const std::vector<float>& values, std::vector<float> dest) {
  for (size_t j = 0; j < std::min(indices.size(), values.size()); ++j) {
    if (indices[j] < dest.size()) dest[indices[j]] = values[j];
  }
  return dest;
}

TEST_CASE("ScatterValues stores what the plain loop stores") {
  std::mt19937 rng(7);
  for (size_t count : {size_t{0}, size_t{1}, kIndexPrefetchDistance - 1, kIndexPrefetchDistance,
                       kIndexPrefetchDistance + 1, size_t{1000}}) {
    std::vector<uint32_t> indices(count);
    std::vector<float> values(count);
    for (size_t j = 0; j < count; ++j) {
      indices[j] = rng() % 4096;
      values[j] = static_cast<float>(j) + 0.5f;
    }
    std::vector<float> dest(4096, -1.0f);
    const std::vector<float> want = PlainScatter(indices, values, dest);
    ScatterValues(indices, values, absl::MakeSpan(dest));
    CHECK(dest == want);
  }
}

TEST_CASE("ScatterValues keeps the last of repeated indices") {
  std::vector<float> dest(8, 0.0f);
  const std::vector<uint32_t> indices = {3, 5, 3, 3};
  const std::vector<float> values = {1, 2, 3, 4};
  ScatterValues(indices, values, absl::MakeSpan(dest));
  CHECK(dest[3] == 4.0f);
  CHECK(dest[5] == 2.0f);
}

TEST_CASE("ScatterValues skips indices outside the destination") {
  // Out of range ahead of the loop (a prefetch) and in it (a store).
  std::vector<uint32_t> indices(40, 1);
  indices[0] = 8;
  indices[kIndexPrefetchDistance + 2] = 0xFFFFFFFFu;
  indices[39] = 7;
  std::vector<float> values(40, 9.0f);
  std::vector<float> dest(8, 0.0f);
  ScatterValues(indices, values, absl::MakeSpan(dest));
  CHECK(dest == std::vector<float>{0, 9, 0, 0, 0, 0, 0, 9});
}

TEST_CASE("ScatterValues stops at the shorter of indices and values") {
  std::vector<float> dest(4, 0.0f);
  ScatterValues(std::vector<uint32_t>{0, 1, 2}, std::vector<float>{5, 6}, absl::MakeSpan(dest));
  CHECK(dest == std::vector<float>{5, 6, 0, 0});
}

TEST_CASE("PrefetchIndexed reads no index at or past count") {
  // An index array holding only what a loop of `count` reads: under ASan a
  // read past it would be reported.
  std::vector<uint32_t> indices(kIndexPrefetchDistance + 1, 0);
  std::vector<float> base(1, 0.0f);
  for (size_t j = 0; j < indices.size(); ++j) {
    PrefetchIndexed(base.data(), 0, indices.data(), j, indices.size());
  }
  CHECK(base[0] == 0.0f);
}

}  // namespace
}  // namespace leeway
