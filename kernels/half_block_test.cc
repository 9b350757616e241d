#include "kernels/half_block.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/cpu_features.h"
#include "kernels/half.h"

namespace leeway {
namespace codec_internal {
namespace {

// Values across fp16's whole range and its edges: subnormals, the rounding
// boundaries, the saturation threshold, fp32 subnormals, signed zeros.
std::vector<float> EdgeValues() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, -65504.0f, 65519.99f, 65520.0f,
                          -65520.0f, 1e30f, -3e38f, 0x1p-24f, 0x1p-25f, 0x1.8p-25f, 0x1p-14f,
                          0x1.ffcp-15f, 6.1e-5f, 1e-45f, -1e-40f, 0.333333f, 2049.0f, 2051.0f};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-30, 18);
  for (int i = 0; i < 20000; ++i) {
    float x = std::ldexp(mantissa(rng), exponent(rng));
    v.push_back(i % 2 ? -x : x);
  }
  return v;
}

TEST_CASE("the fp16 block paths match the scalar conversions bit for bit") {
  INFO("hardware path: " << (CpuHasF16c() ? "F16C" : "none (scalar only)"));
  const std::vector<float> g = EdgeValues();
  std::vector<float> r(g.size());
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> small(-1e-3f, 1e-3f);
  for (float& x : r) x = small(rng);
  const size_t n = g.size();
  for (size_t begin : {size_t{0}, size_t{3}}) {
    std::vector<float> r_fast = r, r_scalar = r;
    std::vector<uint8_t> fast(2 * n, 0xAB), scalar(2 * n, 0xAB);
    EncodeFp16(begin, n - 1, g.data(), r_fast.data(), fast.data());
    EncodeFp16Scalar(begin, n - 1, g.data(), r_scalar.data(), scalar.data());
    CHECK(fast == scalar);
    CHECK(std::memcmp(r_fast.data(), r_scalar.data(), n * sizeof(float)) == 0);
    // Without error feedback.
    EncodeFp16(begin, n - 1, g.data(), nullptr, fast.data());
    EncodeFp16Scalar(begin, n - 1, g.data(), nullptr, scalar.data());
    CHECK(fast == scalar);

    std::vector<float> out_fast(n), out_scalar(n);
    DecodeFp16(fast.data(), begin, n - 1, out_fast.data());
    DecodeFp16Scalar(fast.data(), begin, n - 1, out_scalar.data());
    CHECK(std::memcmp(out_fast.data(), out_scalar.data(), (n - 1 - begin) * sizeof(float)) == 0);
  }
  // Every fp16 bit pattern that is finite decodes the same both ways.
  std::vector<uint8_t> all(2 * 65536);
  for (uint32_t h = 0; h < 65536; ++h) {
    all[2 * h] = static_cast<uint8_t>(h);
    all[2 * h + 1] = static_cast<uint8_t>(h >> 8);
  }
  std::vector<float> a(65536), b(65536);
  DecodeFp16(all.data(), 0, 65536, a.data());
  DecodeFp16Scalar(all.data(), 0, 65536, b.data());
  size_t differ = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 0x1F) == 0x1F) continue;  // Inf/NaN: never in a valid body
    uint32_t x, y;
    std::memcpy(&x, &a[h], 4);
    std::memcpy(&y, &b[h], 4);
    differ += x != y;
  }
  CHECK(differ == 0);
}

TEST_CASE("fp16 saturates finite values beyond its range") {
  const float g[8] = {1e9f, -1e9f, 65520.0f, 65519.0f, 1, 2, 3, 4};
  uint8_t body[16];
  EncodeFp16(0, 8, g, nullptr, body);
  CHECK(Fp16ToFloat(static_cast<uint16_t>(body[0] | body[1] << 8)) == 65504.0f);
  CHECK(Fp16ToFloat(static_cast<uint16_t>(body[2] | body[3] << 8)) == -65504.0f);
  CHECK(Fp16ToFloat(static_cast<uint16_t>(body[4] | body[5] << 8)) == 65504.0f);
  CHECK(Fp16ToFloat(static_cast<uint16_t>(body[6] | body[7] << 8)) == 65504.0f);
}

}  // namespace
}  // namespace codec_internal
}  // namespace leeway
