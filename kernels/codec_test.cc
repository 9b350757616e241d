#include "kernels/codec.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"
#include "kernels/half.h"
#include "kernels/payload.h"

namespace leeway {
namespace {

using testing::AllConfigs;
using testing::DenseConfigs;
using testing::Describe;
using testing::SparseConfigs;
using testing::Gradient;
using testing::Params;

TEST_CASE("every dense codec round-trips within its precision") {
  for (const CodecParams& params : DenseConfigs()) {
    const CodecId codec = params.codec;
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{1} << 20}) {
      INFO(CodecName(codec) << " n=" << n);
      const auto g = Gradient(n, n);
      std::vector<uint8_t> payload;
      REQUIRE(Encode(g, {}, params, &payload).ok());
      CHECK(payload.size() == CompressedSize(params, n));
      std::vector<float> out(n);
      REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
      double max_abs = 0;
      for (float x : g) max_abs = std::max<double>(max_abs, std::fabs(x));
      // sign's scale: the mean |g| of each bucket.
      const size_t bucket = params.sign_bucket;
      std::vector<double> mean_abs((n + bucket - 1) / bucket, 0.0);
      for (size_t i = 0; i < n; ++i) {
        const size_t size = std::min(bucket, n - i / bucket * bucket);
        mean_abs[i / bucket] += std::fabs(g[i]) / size;
      }
      for (size_t i = 0; i < n; ++i) {
        const double err = std::fabs(out[i] - g[i]);
        switch (codec) {
          case CodecId::kNone: REQUIRE(out[i] == g[i]); break;
          case CodecId::kFp16:
            REQUIRE(err <= std::max(std::fabs(g[i]) * 0x1p-11, 0x1p-25)); break;
          case CodecId::kBf16: REQUIRE(err <= std::fabs(g[i]) * 0x1p-8); break;
          case CodecId::kInt8: REQUIRE(err <= max_abs / 127.0 * 1.0001); break;
          case CodecId::kSign: {
            const double mean = mean_abs[i / bucket];
            REQUIRE(std::fabs(std::fabs(out[i]) - mean) <= 1e-6 + mean * 1e-4);
            REQUIRE(std::signbit(out[i]) == std::signbit(g[i]));
            break;
          }
          default: FAIL("not a dense codec");
        }
      }
    }
  }
}

TEST_CASE("error feedback: sent plus residual equals the sum of gradients") {
  constexpr size_t kN = 4096;
  for (const CodecParams& base : AllConfigs()) {
    INFO(Describe(base));
    std::vector<float> residual(kN, 0.0f), sent(kN, 0.0f), given(kN, 0.0f);
    std::vector<double> sent_exact(kN, 0.0), given_exact(kN, 0.0);
    std::vector<uint8_t> payload;
    for (int step = 0; step < 100; ++step) {
      const auto g = Gradient(kN, 1000 + step);
      CodecParams params = base;
      params.seed = step;
      REQUIRE(Encode(g, absl::MakeSpan(residual), params, &payload).ok());
      std::vector<float> decoded(kN);
      REQUIRE(Decode(payload, absl::MakeSpan(decoded)).ok());
      for (size_t i = 0; i < kN; ++i) {
        sent_exact[i] += decoded[i];
        given_exact[i] += g[i];
      }
    }
    for (size_t i = 0; i < kN; ++i) {
      REQUIRE(std::fabs(sent_exact[i] + residual[i] - given_exact[i]) <= 1e-4);
    }
  }
}

TEST_CASE("a sparse encode of v formed by the caller equals Encode of g and r") {
  for (size_t n : {size_t{1000}, size_t{1} << 17}) {
    const auto g = Gradient(n, 21);
    const auto r0 = Gradient(n, 22);
    for (const CodecParams& params : SparseConfigs()) {
      INFO(Describe(params) << " n=" << n);
      auto r = r0;
      std::vector<uint8_t> want;
      REQUIRE(Encode(g, absl::MakeSpan(r), params, &want).ok());
      std::vector<float> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = g[i] + r0[i];
      std::vector<uint8_t> got;
      REQUIRE(EncodeFormed(absl::MakeSpan(v), params, &got).ok());
      CHECK(got == want);
      CHECK(v == r);
    }
  }
  std::vector<float> v = Gradient(100, 23);
  std::vector<uint8_t> payload = {1};
  CHECK(EncodeFormed(absl::MakeSpan(v), Params(CodecId::kFp16), &payload).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(payload.empty());
  v[7] = NAN;
  CHECK(EncodeFormed(absl::MakeSpan(v), Params(CodecId::kTopK), &payload).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("int8's stochastic rounding is unbiased") {
  const std::vector<float> g = {0.3f, -0.71f, 0.05f, 1.0f, -0.002f, 0.5f};
  std::vector<double> mean(g.size(), 0.0);
  constexpr int kSeeds = 4000;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::vector<uint8_t> payload;
    REQUIRE(Encode(g, {}, Params(CodecId::kInt8, seed), &payload).ok());
    std::vector<float> out(g.size());
    REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
    for (size_t i = 0; i < g.size(); ++i) mean[i] += out[i] / kSeeds;
  }
  const double step = 1.0 / 127;  // max |g| is 1
  for (size_t i = 0; i < g.size(); ++i) {
    // Each sample is within one step of g, so the mean's standard error is
    // at most step / (2 sqrt(kSeeds)); allow five of them.
    CHECK(std::fabs(mean[i] - g[i]) <= 5 * step / (2 * std::sqrt(kSeeds)));
  }
}

TEST_CASE("all-zero gradients stay zero") {
  for (const CodecParams& params : AllConfigs()) {
    INFO(Describe(params));
    std::vector<float> g(100, 0.0f), residual(100, 0.0f), out(100, 1.0f);
    std::vector<uint8_t> payload;
    REQUIRE(Encode(g, absl::MakeSpan(residual), params, &payload).ok());
    REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
    for (size_t i = 0; i < 100; ++i) {
      CHECK(out[i] == 0.0f);
      CHECK(residual[i] == 0.0f);
    }
  }
}

TEST_CASE("NaN and Inf are refused and leave the residual as it was") {
  for (const CodecParams& params : AllConfigs()) {
    INFO(Describe(params));
    for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                      std::numeric_limits<float>::infinity()}) {
      std::vector<float> g = {1.0f, bad, 2.0f};
      std::vector<float> residual = {0.5f, 0.5f, 0.5f};
      std::vector<uint8_t> payload;
      const absl::Status status =
          Encode(g, absl::MakeSpan(residual), params, &payload);
      CHECK(status.code() == absl::StatusCode::kInvalidArgument);
      CHECK(residual == std::vector<float>{0.5f, 0.5f, 0.5f});
    }
  }
}

TEST_CASE("a refusal undoes the blocks encoded before the bad value") {
  // The check rides in the encode's pass, block by block: with the bad
  // value far in, earlier blocks were written and must be restored (to
  // float rounding), on one thread and on the pool, the bad value in g,
  // in r, or their sum overflowing.
  const size_t n = size_t{1} << 20;
  const auto g0 = Gradient(n, 21);
  const auto r0 = Gradient(n, 22);
  for (CodecParams params : AllConfigs()) {
    for (int threads : {1, 0}) {
      for (int where = 0; where < 3; ++where) {
        INFO(Describe(params) << " threads=" << threads << " where=" << where);
        params.threads = threads;
        auto g = g0;
        auto r = r0;
        const size_t at = n - 1000;
        if (where == 0) g[at] = std::numeric_limits<float>::quiet_NaN();
        if (where == 1) r[at] = -std::numeric_limits<float>::infinity();
        if (where == 2) g[at] = r[at] = 3e38f;
        const auto r_before = r;
        std::vector<uint8_t> payload = {1, 2, 3};
        const absl::Status status = Encode(g, absl::MakeSpan(r), params, &payload);
        REQUIRE(status.code() == absl::StatusCode::kInvalidArgument);
        CHECK(status.message().find(std::to_string(at)) != std::string::npos);
        CHECK(payload.empty());
        for (size_t i = 0; i < n; ++i) {
          if (i == at) continue;
          // Rounding of g + r and of what was sent (sign: the scale).
          REQUIRE(std::fabs(r[i] - r_before[i]) <=
                  1e-6f * (1 + std::fabs(g[i]) + std::fabs(r_before[i])));
        }
        CHECK(r[at] == r_before[at]);
      }
    }
  }
}

TEST_CASE("fp16 saturates and error feedback keeps the excess") {
  std::vector<float> g = {1e6f, -1e6f, 70000.0f};
  std::vector<float> residual(3, 0.0f), out(3);
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, absl::MakeSpan(residual), Params(CodecId::kFp16), &payload).ok());
  REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
  CHECK(out[0] == 65504.0f);
  CHECK(out[1] == -65504.0f);
  CHECK(residual[0] == 1e6f - 65504.0f);
  CHECK(Fp16ToFloat(FloatToFp16(1.0f)) == 1.0f);
  CHECK(Fp16ToFloat(FloatToFp16(0x1p-24f)) == 0x1p-24f);  // smallest subnormal
  CHECK(Bf16ToFloat(FloatToBf16(3.4e38f)) == Bf16ToFloat(0x7F7F));  // saturates
}

TEST_CASE("decode_accumulate adds a scaled payload") {
  const auto g = Gradient(1000, 5);
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, Params(CodecId::kNone), &payload).ok());
  std::vector<float> out(1000, 1.0f);
  REQUIRE(DecodeAccumulate(payload, -0.5f, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < 1000; ++i) CHECK(out[i] == 1.0f - 0.5f * g[i]);
}

TEST_CASE("corrupt payloads are refused without touching the output") {
  const auto g = Gradient(300, 9);
  for (const CodecParams& params : AllConfigs()) {
    const CodecId codec = params.codec;
    INFO(Describe(params));
    std::vector<uint8_t> good;
    REQUIRE(Encode(g, {}, params, &good).ok());
    std::vector<float> out(300, 7.0f);
    auto untouched = [&] {
      for (float x : out) REQUIRE(x == 7.0f);
    };
    // Truncated at every length, and one byte too long.
    for (size_t len = 0; len < good.size(); ++len) {
      REQUIRE_FALSE(DecodeAccumulate(absl::MakeConstSpan(good).first(len), 1.0f,
                                     absl::MakeSpan(out)).ok());
    }
    auto longer = good;
    longer.push_back(0);
    CHECK_FALSE(Decode(longer, absl::MakeSpan(out)).ok());
    // Wrong element count for the destination.
    std::vector<float> small(299);
    CHECK_FALSE(Decode(good, absl::MakeSpan(small)).ok());
    // Header fields: magic, version, unknown codec, reserved, and a
    // parameter that must be 0 (int8 and sign: a bucket size of 0).
    const bool int8_bucket = codec == CodecId::kInt8 || codec == CodecId::kSign ||
                             (IsSparse(codec) && params.values == CodecId::kInt8);
    for (size_t at : {size_t{0}, size_t{2}, size_t{3}, size_t{12}, size_t{9}}) {
      auto bad = good;
      bad[at] = static_cast<uint8_t>(bad[at] + 1);
      if (at == 3) bad[at] = kMaxCodecId + 1;
      if (at == 9 && int8_bucket) bad[at] = bad[at + 1] = 0;
      CHECK_FALSE(DecodeAccumulate(bad, 1.0f, absl::MakeSpan(out)).ok());
    }
    untouched();
    if (IsSparse(codec)) continue;  // sparse bodies: sparse_codec_test.cc
    // A non-finite value or scale in the body.
    auto nonfinite = good;
    const uint8_t* const end = nonfinite.data() + nonfinite.size();
    uint8_t* body = nonfinite.data() + kPayloadHeaderBytes;
    if (codec == CodecId::kFp16) { body[0] = 0x00; body[1] = 0x7C; }
    else if (codec == CodecId::kBf16) { body[0] = 0x80; body[1] = 0x7F; }
    else { body[0] = 0; body[1] = 0; body[2] = 0x80; body[3] = 0x7F; }
    REQUIRE(body + 4 <= end);
    CHECK_FALSE(DecodeAccumulate(nonfinite, 1.0f, absl::MakeSpan(out)).ok());
    untouched();
  }
}

}  // namespace
}  // namespace leeway
