// The sparse codecs (topk, randomk, threshold, with quantized values):
// selection, round trips, unbiasedness, and corrupt bodies. The properties
// every codec shares (error feedback, NaN, truncation) are in codec_test.cc.
#include <cmath>
#include <vector>

#include "catch2/catch.hpp"
#include "core/common/little_endian.h"
#include "kernels/codec.h"
#include "kernels/codec_test_util.h"
#include "kernels/counter_random.h"
#include "kernels/payload.h"
#include "kernels/topk_select.h"

namespace leeway {
namespace {

using testing::Describe;
using testing::Gradient;
using testing::Params;
using testing::SparseConfigs;

// Relative error a value codec may add.
double ValueTolerance(const CodecParams& p, double value, double max_abs) {
  switch (p.values) {
    case CodecId::kFp16: return std::fabs(value) * 0x1p-11 + 0x1p-25;
    case CodecId::kBf16: return std::fabs(value) * 0x1p-8;
    case CodecId::kInt8: return max_abs / 127.0 * 1.0001;
    default: return 0.0;
  }
}

TEST_CASE("sparse codecs round-trip what they keep") {
  for (const CodecParams& params : SparseConfigs()) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{1} << 20}) {
      INFO(Describe(params) << " n=" << n);
      const auto g = Gradient(n, n + 3);
      std::vector<uint8_t> payload;
      REQUIRE(Encode(g, {}, params, &payload).ok());
      if (params.codec != CodecId::kThreshold) {
        CHECK(payload.size() == CompressedSize(params, n));
      }
      CHECK(payload.size() <= CompressedSize(params, n));
      std::vector<float> out(n, 9.0f);
      REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
      std::vector<uint32_t> kept;
      std::vector<float> values;
      REQUIRE(DecodePairs(payload, n, &kept, &values).ok());
      const size_t cap = SparseKeep(params.density, n);
      if (params.codec == CodecId::kThreshold) {
        REQUIRE(kept.size() <= cap);
      } else {
        REQUIRE(kept.size() == cap);
      }
      // What each kept element should decode to, before value quantization.
      std::vector<double> expect(kept.size());
      double max_abs = 0;
      for (size_t j = 0; j < kept.size(); ++j) {
        const uint32_t i = kept[j];
        expect[j] = g[i];
        if (params.codec == CodecId::kRandomK) {  // unbiased: scaled
          const Stratum s = RandomKStratum(j, n, kept.size());
          REQUIRE(i >= s.begin);
          REQUIRE(i < s.begin + s.size);
          expect[j] *= s.size;
        }
        max_abs = std::max(max_abs, std::fabs(expect[j]));
      }
      std::vector<uint32_t> want;
      if (params.codec == CodecId::kTopK) {
        SelectTopKExact(g, kept.size(), &want);
        REQUIRE(kept == want);
      }
      std::vector<bool> is_kept(n, false);
      for (size_t j = 0; j < kept.size(); ++j) {
        const uint32_t i = kept[j];
        is_kept[i] = true;
        if (params.codec == CodecId::kThreshold) REQUIRE(std::fabs(g[i]) >= 0.01f);
        const double tol = ValueTolerance(params, expect[j], max_abs);
        REQUIRE(std::fabs(values[j] - expect[j]) <= tol + 1e-6 * std::fabs(expect[j]));
        REQUIRE(out[i] == values[j]);
      }
      for (size_t i = 0; i < n; ++i) {
        if (!is_kept[i]) REQUIRE(out[i] == 0.0f);
      }
    }
  }
}

TEST_CASE("threshold keeps every element at or above it, up to the cap") {
  std::vector<float> g(1000, 0.001f);
  g[10] = 0.5f;
  g[20] = -0.02f;
  g[30] = 0.0099f;
  CodecParams params = Params(CodecId::kThreshold);
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, params, &payload).ok());
  std::vector<uint32_t> kept;
  std::vector<float> values;
  REQUIRE(DecodePairs(payload, g.size(), &kept, &values).ok());
  CHECK(kept == std::vector<uint32_t>{10, 20});
  // With a cap of one element, the largest wins.
  params.density = 0.001f;
  REQUIRE(Encode(g, {}, params, &payload).ok());
  REQUIRE(DecodePairs(payload, g.size(), &kept, &values).ok());
  CHECK(kept == std::vector<uint32_t>{10});
}

TEST_CASE("sparse codecs with k >= n keep everything") {
  const auto g = Gradient(100, 4);
  for (CodecId codec : {CodecId::kTopK, CodecId::kRandomK, CodecId::kThreshold}) {
    INFO(CodecName(codec));
    CodecParams params = Params(codec);
    params.density = 1.0f;
    params.threshold = 0.0f;
    std::vector<float> residual(100, 0.0f), out(100);
    std::vector<uint8_t> payload;
    REQUIRE(Encode(g, absl::MakeSpan(residual), params, &payload).ok());
    REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
    CHECK(out == g);
    for (float r : residual) CHECK(r == 0.0f);
  }
}

TEST_CASE("a top-k hint carried between encodes leaves payloads as they were") {
  const size_t n = 1 << 18;
  for (CodecId values : {CodecId::kNone, CodecId::kInt8}) {
    CodecParams params = Params(CodecId::kTopK, 3, values);
    params.density = 0.005f;
    TopKHint hint;
    std::vector<float> with(n, 0.0f), without(n, 0.0f);
    for (int step = 0; step < 6; ++step) {
      INFO("values " << CodecName(values) << " step " << step);
      const auto g = Gradient(n, 40 + step);
      std::vector<uint8_t> hinted, plain;
      params.topk_hint = &hint;
      REQUIRE(Encode(g, absl::MakeSpan(with), params, &hinted).ok());
      params.topk_hint = nullptr;
      REQUIRE(Encode(g, absl::MakeSpan(without), params, &plain).ok());
      CHECK(hinted == plain);
      CHECK(with == without);
      CHECK(hint.k == SparseKeep(params.density, n));
    }
  }
}

TEST_CASE("randomk is unbiased over seeds") {
  const std::vector<float> g = {0.3f, -0.7f, 0.05f, 1.0f, -0.002f, 0.5f, 0.25f};
  std::vector<double> mean(g.size(), 0.0);
  constexpr int kSeeds = 20000;
  CodecParams params = Params(CodecId::kRandomK);
  params.density = 0.3f;  // k = 3 strata of sizes 2, 2, 3
  for (int seed = 0; seed < kSeeds; ++seed) {
    params.seed = seed;
    std::vector<uint8_t> payload;
    REQUIRE(Encode(g, {}, params, &payload).ok());
    std::vector<float> out(g.size());
    REQUIRE(Decode(payload, absl::MakeSpan(out)).ok());
    for (size_t i = 0; i < g.size(); ++i) mean[i] += out[i] / kSeeds;
  }
  for (size_t i = 0; i < g.size(); ++i) {
    // A sample is 0 or size * g: standard error <= 3|g| / sqrt(kSeeds).
    INFO("i=" << i);
    CHECK(std::fabs(mean[i] - g[i]) <= 5 * 3 * std::fabs(g[i]) / std::sqrt(kSeeds));
  }
}

TEST_CASE("decode_accumulate with a sparse payload touches only kept elements") {
  const auto g = Gradient(5000, 8);
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, Params(CodecId::kTopK), &payload).ok());
  std::vector<float> dense(5000), out(5000, 2.0f);
  REQUIRE(Decode(payload, absl::MakeSpan(dense)).ok());
  REQUIRE(DecodeAccumulate(payload, -0.5f, absl::MakeSpan(out)).ok());
  for (size_t i = 0; i < 5000; ++i) CHECK(out[i] == 2.0f - 0.5f * dense[i]);
}

// Offsets inside a topk payload with fp32 values and k kept.
constexpr size_t kCount = kPayloadHeaderBytes;
constexpr size_t kIndex0 = kPayloadHeaderBytes + 4;

TEST_CASE("corrupt sparse bodies are refused without touching the output") {
  const auto g = Gradient(300, 9);
  std::vector<uint8_t> good;
  REQUIRE(Encode(g, {}, Params(CodecId::kTopK), &good).ok());
  const size_t k = LoadLE32(good.data() + kCount);
  REQUIRE(k == 30);
  std::vector<float> out(300, 7.0f);
  auto refused = [&](std::vector<uint8_t> bad) {
    CHECK_FALSE(DecodeAccumulate(bad, 1.0f, absl::MakeSpan(out)).ok());
    std::vector<uint32_t> i;
    std::vector<float> v;
    CHECK_FALSE(DecodePairs(bad, 300, &i, &v).ok());
  };
  auto with = [&](size_t at, uint32_t value) {
    auto bad = good;
    StoreLE32(bad.data() + at, value);
    return bad;
  };
  refused(with(kIndex0, 300));                       // out of range
  refused(with(kIndex0 + 4 * (k - 1), 0xFFFFFFFFu)); // far out of range
  refused(with(kIndex0 + 4, LoadLE32(good.data() + kIndex0)));  // duplicate
  refused(with(kIndex0, LoadLE32(good.data() + kIndex0 + 4) + 1));  // descending
  refused(with(kCount, 301));                        // k > n
  refused(with(kCount, k - 1));                      // k disagrees with size
  refused(with(kCount, 0xFFFFFFFFu));
  refused(with(kIndex0 + 4 * k, 0x7F800000u));       // an infinite value
  auto values_sign = good;
  values_sign[8] = static_cast<uint8_t>(CodecId::kSign);  // not a value codec
  refused(values_sign);
  for (float x : out) REQUIRE(x == 7.0f);

  // randomk: the seed replaces indices, so only sizes and values can lie.
  std::vector<uint8_t> randomk;
  REQUIRE(Encode(g, {}, Params(CodecId::kRandomK), &randomk).ok());
  auto longer = randomk;
  longer.insert(longer.end(), {0, 0, 0, 0});
  refused(longer);
  auto shorter = randomk;
  shorter.resize(shorter.size() - 4);
  refused(shorter);
  auto zero_k = randomk;
  StoreLE32(zero_k.data() + kCount, 0);
  refused(zero_k);
  for (float x : out) REQUIRE(x == 7.0f);
}

TEST_CASE("bad sparse parameters are refused") {
  const auto g = Gradient(10, 1);
  std::vector<uint8_t> payload;
  CodecParams params = Params(CodecId::kTopK);
  for (float density : {0.0f, -0.5f, 1.5f, NAN}) {
    params.density = density;
    CHECK_FALSE(Encode(g, {}, params, &payload).ok());
  }
  params = Params(CodecId::kThreshold);
  params.threshold = INFINITY;
  CHECK_FALSE(Encode(g, {}, params, &payload).ok());
  params = Params(CodecId::kTopK, 1, CodecId::kSign);
  CHECK_FALSE(Encode(g, {}, params, &payload).ok());
  params = Params(CodecId::kTopK, 1, CodecId::kInt8);
  params.int8_bucket = 0;
  CHECK_FALSE(Encode(g, {}, params, &payload).ok());
}

}  // namespace
}  // namespace leeway

namespace leeway {
namespace {

TEST_CASE("EncodePairs writes what DecodePairs reads, and checks its input") {
  std::vector<uint8_t> payload;
  REQUIRE(EncodePairs(10, std::vector<uint32_t>{1, 4, 9},
                      std::vector<float>{0.5f, -2.0f, 3.0f}, &payload).ok());
  std::vector<uint32_t> indices;
  std::vector<float> values;
  REQUIRE(DecodePairs(payload, 10, &indices, &values).ok());
  CHECK(indices == std::vector<uint32_t>{1, 4, 9});
  CHECK(values == std::vector<float>{0.5f, -2.0f, 3.0f});
  REQUIRE(EncodePairs(10, {}, {}, &payload).ok());
  REQUIRE(DecodePairs(payload, 10, &indices, &values).ok());
  CHECK(indices.empty());
  CHECK_FALSE(EncodePairs(10, std::vector<uint32_t>{4, 1},
                          std::vector<float>{1, 2}, &payload).ok());
  CHECK_FALSE(EncodePairs(10, std::vector<uint32_t>{10},
                          std::vector<float>{1}, &payload).ok());
  CHECK_FALSE(EncodePairs(10, std::vector<uint32_t>{1},
                          std::vector<float>{}, &payload).ok());
}

}  // namespace
}  // namespace leeway
