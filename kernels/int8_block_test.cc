#include "kernels/int8_block.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"
#include "kernels/counter_random.h"
#include "kernels/cpu_features.h"
#include "kernels/dense_codec.h"

namespace leeway {
namespace codec_internal {
namespace {

using testing::Gradient;

TEST_CASE("the int8 block paths match the scalar one bit for bit") {
  // Buckets that do and do not hold whole groups of 16 or 32; sizes that
  // end mid-group and mid-bucket; an all-zero bucket.
  for (Int8Path path : {Int8Path::kAvx2, Int8Path::kAvx512}) {
    if (!CanTakeInt8Path(path)) {
      WARN("this CPU cannot take the " << (path == Int8Path::kAvx2 ? "AVX2" : "AVX-512")
                                        << " path: not compared");
      continue;
    }
    for (uint32_t bucket : {1u, 24u, 100u, 512u, 4096u}) {
      for (size_t n : {size_t{1}, size_t{15}, size_t{1000}, size_t{20011}}) {
        for (bool residual : {false, true}) {
          INFO("path=" << static_cast<int>(path) << " bucket=" << bucket << " n=" << n
                       << " residual=" << residual);
          auto g = Gradient(n, 1);
          std::fill(g.begin(), g.begin() + std::min<size_t>(n, bucket), 0.0f);
          const auto r0 = residual ? Gradient(n, 2) : std::vector<float>(n, 0.0f);
          std::vector<float> r_fast = r0, r_scalar = r0;
          const size_t bytes = DenseBodyBytes(CodecId::kInt8, n, bucket);
          std::vector<uint8_t> fast(bytes, 0xAA), scalar(bytes, 0x55);
          const uint32_t seed = DitherSeed(77);
          CHECK(EncodeInt8BucketsOn(path, bucket, seed, n, 0, n, g.data(),
                                    residual ? r_fast.data() : nullptr, fast.data()) == n);
          CHECK(EncodeInt8BucketsOn(Int8Path::kScalar, bucket, seed, n, 0, n, g.data(),
                                    residual ? r_scalar.data() : nullptr,
                                    scalar.data()) == n);
          REQUIRE(fast == scalar);
          REQUIRE(std::memcmp(r_fast.data(), r_scalar.data(), 4 * n) == 0);
        }
      }
    }
  }
}

TEST_CASE("int8 buckets stop before one holding a non-finite value") {
  auto g = Gradient(2048, 3);
  g[1500] = std::numeric_limits<float>::infinity();
  std::vector<float> r(2048, 0.25f);
  std::vector<uint8_t> body(DenseBodyBytes(CodecId::kInt8, 2048, 512));
  for (Int8Path path : {Int8Path::kScalar, Int8Path::kAvx2, Int8Path::kAvx512}) {
    if (!CanTakeInt8Path(path)) continue;
    INFO("path=" << static_cast<int>(path));
    std::fill(r.begin(), r.end(), 0.25f);
    CHECK(EncodeInt8BucketsOn(path, 512, 1, 2048, 0, 2048, g.data(), r.data(), body.data()) ==
          1024);
    CHECK(r[1024] == 0.25f);  // the refused bucket is untouched
    CHECK(r[1023] != 0.25f);
  }
}

TEST_CASE("the dither pairs two elements on one hash") {
  // Element j of a group of 16 takes the low half of hash j, element j + 8
  // its high half: all in (0, 1), none equal to another here.
  std::vector<float> u;
  for (uint32_t i = 32; i < 48; ++i) u.push_back(DitherUniform(5, i));
  const uint32_t h = DitherHash(5, 16 + 3);
  CHECK(u[3] == ((h & 0xFFFF) + 0.5f) / 65536.0f);
  CHECK(u[11] == ((h >> 16) + 0.5f) / 65536.0f);
  for (float x : u) CHECK((x > 0.0f && x < 1.0f));
}

}  // namespace
}  // namespace codec_internal
}  // namespace leeway
