#include "kernels/gather_block.h"

#include <cstring>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"
#include "kernels/cpu_features.h"
#include "kernels/half.h"

namespace leeway {
namespace codec_internal {
namespace {

using testing::Gradient;

TEST_CASE("the gather's paths agree, with and without a residual") {
  INFO("hardware path: " << (CpuHasAvx2() ? "AVX2" : "none (scalar only)"));
  const size_t n = 10007;  // ends mid-vector
  const auto g = Gradient(n, 1);
  const auto r0 = Gradient(n, 2);
  for (uint32_t key : {0u, MagnitudeKey(0.01f), MagnitudeKey(0.05f), 0x7F7FFFFFu}) {
    for (bool residual : {false, true}) {
      INFO("key=" << key << " residual=" << residual);
      std::vector<float> r_fast = r0, r_scalar = r0;
      std::vector<uint32_t> fast, fast_keys, scalar, scalar_keys;
      GatherBlock(g.data(), residual ? r_fast.data() : nullptr, 3, n, key, &fast, &fast_keys);
      GatherBlockScalar(g.data(), residual ? r_scalar.data() : nullptr, 3, n, key, &scalar,
                        &scalar_keys);
      REQUIRE(fast == scalar);
      REQUIRE(fast_keys == scalar_keys);
      REQUIRE(std::memcmp(r_fast.data(), r_scalar.data(), 4 * n) == 0);
      for (size_t j = 0; j < fast.size(); ++j) {
        const float v = residual ? g[fast[j]] + r0[fast[j]] : g[fast[j]];
        REQUIRE(fast_keys[j] == MagnitudeKey(v));
        REQUIRE(fast_keys[j] >= key);
      }
    }
  }
}

TEST_CASE("keys above a threshold, in unsigned order") {
  std::mt19937 rng(5);
  std::vector<uint32_t> keys(5003);
  for (auto& k : keys) k = rng();  // half of them at or above 2^31
  for (uint32_t threshold : {0u, 0x7FFFFFFFu, 0x80000000u, 0xF0000000u, 0xFFFFFFFFu}) {
    INFO("threshold=" << threshold);
    std::vector<uint32_t> got, want;
    GatherKeysAbove(keys.data(), 1, keys.size(), threshold, &got);
    for (size_t i = 1; i < keys.size(); ++i) {
      if (keys[i] > threshold) want.push_back(static_cast<uint32_t>(i));
    }
    REQUIRE(got == want);
  }
}

}  // namespace
}  // namespace codec_internal
}  // namespace leeway
