#include "kernels/sign_block.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"
#include "kernels/cpu_features.h"
#include "kernels/dense_codec.h"

namespace leeway {
namespace codec_internal {
namespace {

using testing::Gradient;

TEST_CASE("the sign block paths match the scalar one bit for bit") {
  INFO("hardware path: " << (CpuHasAvx2() ? "AVX2" : "none (scalar only)"));
  // Sizes that end mid-byte, mid-vector and mid-bucket; buckets of one
  // byte, of fewer elements than a vector pass, and larger.
  for (uint32_t bucket : {8u, 24u, 2048u}) {
    for (size_t n : {size_t{1}, size_t{13}, size_t{8191}, size_t{20003}}) {
      for (bool residual : {false, true}) {
        INFO("bucket=" << bucket << " n=" << n << " residual=" << residual);
        auto g = Gradient(n, 1);
        g[0] = -0.0f;  // the sign bit decides: -0 is negative
        const auto r0 = Gradient(n, 2);
        std::vector<float> r_fast = r0, r_scalar = r0;
        const size_t bytes = DenseBodyBytes(CodecId::kSign, n, bucket);
        std::vector<uint8_t> fast(bytes, 0xAA), scalar(bytes, 0x55);
        EncodeSignBuckets(bucket, n, 0, n, g.data(), residual ? r_fast.data() : nullptr,
                          fast.data());
        EncodeSignBucketsScalar(bucket, n, 0, n, g.data(),
                                residual ? r_scalar.data() : nullptr, scalar.data());
        REQUIRE(fast == scalar);
        REQUIRE(std::memcmp(r_fast.data(), r_scalar.data(), 4 * n) == 0);
        if (!residual) {
          CHECK((scalar[4 * Buckets(n, bucket)] & 1) == 1);  // -0
          CHECK(r_scalar == r0);  // nothing written without a residual
        }
      }
    }
  }
}

TEST_CASE("a sign bucket's scale is its mean magnitude and r keeps the rest") {
  const std::vector<float> g = {1, -3, 2, -2, 0.5f, 0.5f, -1, 6,   // bucket 0
                                8, 8, 8, -8, 8, 8, 8, 8,           // bucket 1
                                -2};                               // bucket 2
  std::vector<float> r(g.size(), 0.0f);
  std::vector<uint8_t> body(DenseBodyBytes(CodecId::kSign, g.size(), 8));
  EncodeSignBuckets(8, g.size(), 0, g.size(), g.data(), r.data(), body.data());
  float scales[3];
  std::memcpy(scales, body.data(), 12);
  CHECK(scales[0] == 2.0f);
  CHECK(scales[1] == 8.0f);
  CHECK(scales[2] == 2.0f);
  CHECK(body[12] == 0b01001010);  // elements 1, 3 and 6 negative
  CHECK(body[13] == 0b00001000);
  CHECK(body[14] == 0b00000001);
  CHECK(r[0] == -1.0f);   // 1 - 2
  CHECK(r[1] == -1.0f);   // -3 + 2
  CHECK(r[11] == 0.0f);   // -8 + 8
  CHECK(r[16] == 0.0f);
}

TEST_CASE("sign values decode from any element, on every path alike") {
  INFO("hardware path: " << (CpuHasAvx2() ? "AVX2" : "none (scalar only)"));
  // 5 bytes of bits; ranges that start and end mid-byte, on byte edges,
  // shorter than a byte and empty.
  const uint8_t bits[] = {0b10110001, 0xFF, 0x00, 0b01010101, 0b10000000};
  const float scale = 0.375f;
  uint32_t scale_bits;
  std::memcpy(&scale_bits, &scale, 4);
  auto expected = [&](size_t i) { return ((bits[i / 8] >> (i % 8)) & 1) ? -scale : scale; };
  for (size_t from : {0, 3, 8, 13}) {
    for (size_t to : {from, from + 1, size_t{16}, size_t{29}, size_t{40}}) {
      if (to < from) continue;
      INFO("from=" << from << " to=" << to);
      std::vector<float> fast(to - from + 1, 7.0f), scalar(to - from + 1, 7.0f);
      DecodeSignValues(bits, scale_bits, from, to, fast.data());
      DecodeSignValuesScalar(bits, scale_bits, from, to, scalar.data());
      for (size_t i = from; i < to; ++i) {
        CHECK(fast[i - from] == expected(i));
        CHECK(std::signbit(scalar[i - from]) == std::signbit(expected(i)));
      }
      CHECK(fast.back() == 7.0f);  // nothing written past to
      CHECK(std::memcmp(fast.data(), scalar.data(), 4 * fast.size()) == 0);
    }
  }
  // A zero scale with a set bit is -0, bit for bit.
  float zero;
  DecodeSignValues(bits, 0, 0, 1, &zero);
  CHECK(std::signbit(zero));
}

TEST_CASE("a decode over a range that starts mid-byte and mid-bucket") {
  // The encoder's payload, decoded over [5, 2059) with buckets of 16 (the
  // range crosses 129 buckets and starts and ends inside bytes).
  const size_t n = 2100;
  const uint32_t bucket = 16;
  auto g = Gradient(n, 3);
  std::vector<uint8_t> body(DenseBodyBytes(CodecId::kSign, n, bucket));
  EncodeSignBuckets(bucket, n, 0, n, g.data(), nullptr, body.data());
  std::vector<float> whole(n), part(n, 0.0f);
  DecodeDenseRange(CodecId::kSign, bucket, n, body.data(), 0, n,
                   [&](size_t i, float v) { whole[i] = v; });
  DecodeDenseRange(CodecId::kSign, bucket, n, body.data(), 5, 2059,
                   [&](size_t i, float v) { part[i] = v; });
  for (size_t i = 0; i < n; ++i) {
    INFO("i=" << i);
    CHECK(part[i] == (i >= 5 && i < 2059 ? whole[i] : 0.0f));
    CHECK(std::signbit(whole[i]) == std::signbit(g[i]));
  }
}

}  // namespace
}  // namespace codec_internal
}  // namespace leeway
