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

}  // namespace
}  // namespace codec_internal
}  // namespace leeway
