#include "worker/sparse_input_pass.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "kernels/codec.h"
#include "kernels/codec_test_util.h"
#include "kernels/half.h"

namespace leeway {
namespace {

using testing::Gradient;

constexpr size_t kN = 100003;  // not a multiple of the pass's blocks or of 8

double SumOfSquaresReference(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += double{x} * x;
  return sum;
}

TEST_CASE("the pass forms u = m u + g and v = r + u as separate passes would") {
  const auto g = Gradient(kN, 1);
  auto velocity = Gradient(kN, 2);
  auto r = Gradient(kN, 3);
  std::vector<float> u(kN), v(kN);
  for (size_t i = 0; i < kN; ++i) {
    u[i] = 0.9f * velocity[i] + g[i];
    v[i] = r[i] + u[i];
  }
  const absl::StatusOr<SparseInputSums> sums =
      FormSparseInput(0.9f, absl::MakeSpan(velocity), g, absl::MakeSpan(r), {});
  REQUIRE(sums.ok());
  CHECK(velocity == u);
  CHECK(r == v);
  CHECK(sums->gradient == Approx(SumOfSquaresReference(g)).epsilon(1e-5));
  CHECK(sums->v == Approx(SumOfSquaresReference(v)).epsilon(1e-5));
}

TEST_CASE("without momentum the velocity is not touched") {
  const auto g = Gradient(kN, 4);
  auto r = Gradient(kN, 5);
  std::vector<float> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = r[i] + g[i];
  REQUIRE(FormSparseInput(0.0f, {}, g, absl::MakeSpan(r), {}).ok());
  CHECK(r == v);
}

TEST_CASE("gathers store each chunk's candidates relative to the chunk, up to the cap") {
  const auto g = Gradient(kN, 6);
  auto velocity = Gradient(kN, 7);
  auto r = Gradient(kN, 8);
  std::vector<float> v(kN);
  for (size_t i = 0; i < kN; ++i) v[i] = r[i] + (0.5f * velocity[i] + g[i]);
  const uint32_t key = MagnitudeKey(0.06f);  // a few percent of v
  TopKHint first, second, capped;
  for (TopKHint* hint : {&first, &second, &capped}) hint->key = key;
  // Gaps before, between and after the gathers; the last one's cap is low.
  const std::vector<HintGather> gathers = {
      {100, 40000, 100000, &first}, {40000, 70001, 100000, &second}, {80000, 95000, 10, &capped}};
  REQUIRE(FormSparseInput(0.5f, absl::MakeSpan(velocity), g, absl::MakeSpan(r), gathers).ok());
  REQUIRE(r == v);
  for (const HintGather& gather : gathers) {
    INFO("gather at " << gather.begin);
    std::vector<uint32_t> want, want_keys;
    for (size_t i = gather.begin; i < gather.end; ++i) {
      if (MagnitudeKey(v[i]) >= key) {
        want.push_back(static_cast<uint32_t>(i - gather.begin));
        want_keys.push_back(MagnitudeKey(v[i]));
      }
    }
    REQUIRE(want.size() > 20);
    CHECK(gather.hint->gathered);
    if (gather.hint == &capped) {
      CHECK(gather.hint->count > gather.cap);
      CHECK(gather.hint->count < want.size());  // it stopped storing
      continue;
    }
    CHECK(gather.hint->count == want.size());
    CHECK(gather.hint->indices == want);
    CHECK(gather.hint->keys == want_keys);
  }
}

TEST_CASE("a non-finite v is refused, naming its index, with everything restored") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Bad {
    size_t at;
    float g;
    float r;
    const char* says;
  };
  // In the first block, on a block's edge, mid-vector, in the scalar tail;
  // NaN, Inf, and a finite g whose sum with r overflows.
  for (const Bad& bad : {Bad{0, nan, 0.5f, "gradient holds"}, Bad{2048, -inf, 0.5f, "gradient holds"},
                         Bad{50005, 3e38f, 3e38f, "overflows"},
                         Bad{kN - 1, nan, 0.5f, "gradient holds"}}) {
    INFO("at " << bad.at << ": " << bad.g);
    auto g = Gradient(kN, 9);
    auto velocity = Gradient(kN, 10);
    auto r = Gradient(kN, 11);
    g[bad.at] = bad.g;
    r[bad.at] = bad.r;
    const auto velocity_before = velocity;
    const auto r_before = r;
    TopKHint hint;
    hint.key = MagnitudeKey(1.0f);
    const std::vector<HintGather> gathers = {{0, kN, 2 * kN, &hint}};
    const absl::Status status =
        FormSparseInput(0.9f, absl::MakeSpan(velocity), g, absl::MakeSpan(r), gathers).status();
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    CHECK(status.message().find(bad.says) != std::string::npos);
    CHECK(status.message().find(absl::StrCat(" at ", bad.at, ":")) != std::string::npos);
    CHECK_FALSE(hint.gathered);
    for (size_t i = 0; i < kN; ++i) {
      // Undone in float: r = v - u, velocity = (u - g) / m.
      REQUIRE(r[i] == Approx(r_before[i]).margin(1e-5));
      REQUIRE(velocity[i] == Approx(velocity_before[i]).margin(1e-5));
    }
  }
}

TEST_CASE("bad arguments are refused before anything is written") {
  const auto g = Gradient(1000, 12);
  std::vector<float> velocity(1000, 1.0f), r(1000, 1.0f), shorter(999, 1.0f);
  TopKHint hint;
  hint.key = 1;
  auto refused = [&](float m, absl::Span<float> w, absl::Span<float> residual,
                     std::vector<HintGather> gathers) {
    return FormSparseInput(m, w, g, residual, gathers).status().code() ==
           absl::StatusCode::kInvalidArgument;
  };
  CHECK(refused(0.9f, absl::MakeSpan(shorter), absl::MakeSpan(r), {}));
  CHECK(refused(0.9f, absl::MakeSpan(velocity), absl::MakeSpan(shorter), {}));
  CHECK(refused(1.0f, absl::MakeSpan(velocity), absl::MakeSpan(r), {}));
  CHECK(refused(0.9f, absl::MakeSpan(velocity), absl::MakeSpan(r),
                {{0, 600, 10, &hint}, {500, 1000, 10, &hint}}));  // overlapping
  CHECK(refused(0.9f, absl::MakeSpan(velocity), absl::MakeSpan(r), {{900, 1001, 10, &hint}}));
  CHECK(refused(0.9f, absl::MakeSpan(velocity), absl::MakeSpan(r), {{0, 10, 10, nullptr}}));
  CHECK(velocity == std::vector<float>(1000, 1.0f));
  CHECK(r == std::vector<float>(1000, 1.0f));
}

TEST_CASE("top-k on a v formed by the pass is the exact top k, with the hint hit or missed") {
  const size_t n = size_t{1} << 20;
  const size_t k = SparseKeep(0.001f, n);  // a sample of 1 in 16: hinted
  const auto g = Gradient(n, 13);
  auto velocity = Gradient(n, 14);
  auto r = Gradient(n, 15);
  std::vector<uint32_t> ranked(n);
  for (size_t i = 0; i < n; ++i) ranked[i] = MagnitudeKey(r[i] + (0.9f * velocity[i] + g[i]));
  std::sort(ranked.begin(), ranked.end(), std::greater<uint32_t>());
  // Hints whose gather holds about 1.5k (a hit), fewer than k and more
  // than the cap (misses: the sampled path runs on the formed v).
  for (size_t rank : {k + k / 2, k / 2, 20 * k}) {
    INFO("hint at rank " << rank);
    TopKHint hint;
    hint.k = k;
    hint.key = ranked[rank];
    REQUIRE(TopKHintDue(hint, n, k));
    std::vector<float> w = velocity, residual = r;
    const std::vector<HintGather> gathers = {{0, n, TopKHintCap(k), &hint}};
    REQUIRE(FormSparseInput(0.9f, absl::MakeSpan(w), g, absl::MakeSpan(residual), gathers).ok());
    const std::vector<float> v = residual;
    std::vector<uint32_t> want;
    SelectTopKExact(v, k, &want);
    CodecParams topk;
    topk.codec = CodecId::kTopK;
    topk.density = 0.001f;
    topk.topk_hint = &hint;
    std::vector<uint8_t> payload;
    REQUIRE(EncodeFormed(absl::MakeSpan(residual), topk, &payload).ok());
    CHECK_FALSE(hint.gathered);
    std::vector<uint32_t> sent;
    std::vector<float> values;
    REQUIRE(DecodePairs(payload, n, &sent, &values).ok());
    CHECK(sent == want);
    for (size_t j = 0; j < sent.size(); ++j) {
      REQUIRE(values[j] == v[sent[j]]);
      REQUIRE(residual[sent[j]] == 0.0f);
    }
  }
}

}  // namespace
}  // namespace leeway
