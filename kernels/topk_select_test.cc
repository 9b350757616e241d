#include "kernels/topk_select.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_test_util.h"
#include "kernels/half.h"

namespace leeway {
namespace {

using testing::Gradient;

// SelectTopK on input that must be accepted.
template <typename... Args>
TopKStats Select(Args&&... args) {
  absl::StatusOr<TopKStats> stats = SelectTopK(std::forward<Args>(args)...);
  REQUIRE(stats.ok());
  return *stats;
}

// The k-th largest magnitude, by a full sort: the reference.
float KthMagnitude(const std::vector<float>& v, size_t k) {
  std::vector<float> mags(v.size());
  for (size_t i = 0; i < v.size(); ++i) mags[i] = std::fabs(v[i]);
  std::sort(mags.begin(), mags.end(), std::greater<float>());
  return mags[k - 1];
}

void CheckIsTopK(const std::vector<float>& v, size_t k,
                 const std::vector<uint32_t>& got) {
  REQUIRE(got.size() == k);
  REQUIRE(std::is_sorted(got.begin(), got.end()));
  REQUIRE(std::adjacent_find(got.begin(), got.end()) == got.end());
  const float kth = KthMagnitude(v, k);
  float smallest = INFINITY;
  for (uint32_t i : got) smallest = std::min(smallest, std::fabs(v[i]));
  // The selection's guarantee: exact (tolerance zero).
  REQUIRE(smallest == kth);
  size_t above = 0;
  for (float x : v) above += std::fabs(x) > kth;
  size_t kept_above = 0;
  for (uint32_t i : got) kept_above += std::fabs(v[i]) > kth;
  REQUIRE(kept_above == above);
}

TEST_CASE("sampled top-k equals the exact selection on large tensors") {
  for (size_t n : {size_t{1} << 17, size_t{1} << 20, size_t{3000017}}) {
    const auto v = Gradient(n, n);
    for (double density : {0.001, 0.01, 0.1}) {
      INFO("n=" << n << " density=" << density);
      const size_t k = static_cast<size_t>(std::ceil(density * n));
      std::vector<uint32_t> sampled, exact, single;
      const TopKStats stats = Select(v, k, 7, 0, &sampled);
      CHECK(stats.sampled);
      CHECK(stats.passes == 1);
      CHECK(stats.candidates >= k);
      // The threshold sits a few sample ranks below the k-th: about 1.5x k
      // at the sample's 64 expected hits, up to 4x at the smallest tensors'
      // few (n / 32 elements sampled).
      CHECK(stats.candidates <= 4 * k + 200);
      SelectTopKExact(v, k, &exact);
      CHECK(sampled == exact);
      Select(v, k, 7, 1, &single);
      CHECK(single == sampled);
      if (n == (size_t{1} << 20)) CheckIsTopK(v, k, sampled);
    }
  }
}

// Error feedback's loop, as a worker runs it: v = g + r, the top k sent
// and cleared from r; `hint` carried from step to step (or null).
struct FeedbackRun {
  std::vector<std::vector<uint32_t>> selections;
  std::vector<TopKStats> stats;
  std::vector<float> residual;
};

FeedbackRun RunFeedback(size_t n, size_t k, int steps, TopKHint* hint) {
  FeedbackRun run;
  run.residual.assign(n, 0.0f);
  for (int t = 0; t < steps; ++t) {
    const auto g = Gradient(n, 100 + t);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = g[i] + run.residual[i];
    std::vector<uint32_t> got, exact;
    run.stats.push_back(Select(g.data(), run.residual.data(), n, k, t, 0, &got, hint));
    SelectTopKExact(v, k, &exact);
    REQUIRE(got == exact);
    REQUIRE(run.residual == v);  // formed once, whichever path ran
    for (uint32_t i : got) run.residual[i] = 0.0f;
    run.selections.push_back(got);
  }
  return run;
}

TEST_CASE("a hint carried between steps replaces the sample and changes nothing") {
  for (size_t n : {size_t{1} << 17, size_t{1} << 20}) {
    for (size_t k : {n / 1000, n / 100}) {
      INFO("n=" << n << " k=" << k);
      TopKHint hint;
      const FeedbackRun hinted = RunFeedback(n, k, 12, &hint);
      const FeedbackRun plain = RunFeedback(n, k, 12, nullptr);
      CHECK(hinted.selections == plain.selections);
      CHECK(hinted.residual == plain.residual);
      CHECK(hinted.stats[0].sampled);  // no hint yet
      if (!TopKHinted(n, k)) {
        // 1% of 2^20: a sample of 6,400, 1 in 164 elements, spares little.
        CHECK(n * k == (size_t{1} << 20) * ((size_t{1} << 20) / 100));
        CHECK(hint.k == 0);
        for (const TopKStats& stats : hinted.stats) CHECK_FALSE(stats.hinted);
        continue;
      }
      CHECK(hint.k == k);
      // Step 1's v is the first to hold a residual, wider than step 0's;
      // from step 2 on one gather at the hint does.
      for (size_t t = 2; t < hinted.stats.size(); ++t) {
        INFO("step " << t << " candidates " << hinted.stats[t].candidates);
        CHECK(hinted.stats[t].hinted);
        CHECK(hinted.stats[t].passes == 1);
        CHECK(hinted.stats[t].candidates <= 8 * k + 64);
        CHECK_FALSE(plain.stats[t].hinted);
      }
    }
  }
}

TEST_CASE("a hint that misses falls back to the sample on v formed once") {
  const size_t n = 1 << 18;
  const size_t k = n / 1000;
  const auto g = Gradient(n, 1);
  const auto r0 = Gradient(n, 2);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = g[i] + r0[i];
  std::vector<uint32_t> exact;
  SelectTopKExact(v, k, &exact);
  // Above every element (too few candidates), below all of them (more than
  // the cap), set for another k (ignored).
  const TopKHint too_high = {k, MagnitudeKey(1e6f)};
  const TopKHint too_low = {k, MagnitudeKey(1e-30f)};
  const TopKHint other_k = {k + 1, MagnitudeKey(1e-30f)};
  for (const TopKHint& start : {too_high, too_low, other_k}) {
    INFO("hint key " << start.key << " for k " << start.k);
    TopKHint hint = start;
    auto r = r0;
    std::vector<uint32_t> got;
    const TopKStats stats = Select(g.data(), r.data(), n, k, 9, 0, &got, &hint);
    CHECK(got == exact);
    CHECK(r == v);
    CHECK_FALSE(stats.hinted);
    CHECK(stats.sampled);
    CHECK(stats.passes == (start.k == k ? 2 : 1));
    // The next hint: the magnitude ranked k + k/2 + 1.
    CHECK(hint.k == k);
    CHECK(hint.key == MagnitudeKey(KthMagnitude(v, k + k / 2 + 1)));
  }
  // An exact fallback (all equal) leaves a hint a tenth below the k-th.
  std::vector<float> flat(n, 0.5f);
  TopKHint hint;
  std::vector<uint32_t> got;
  CHECK_FALSE(Select(flat, k, 3, 0, &got, &hint).sampled);
  CHECK(hint.k == k);
  CHECK(hint.key == MagnitudeKey(0.45f));
  // A non-finite v is refused on the hint's gather too, r restored.
  auto bad = g;
  bad[n / 2] = INFINITY;
  auto r = r0;
  hint = {k, MagnitudeKey(KthMagnitude(v, 2 * k))};
  CHECK(SelectTopK(bad.data(), r.data(), n, k, 9, 0, &got, &hint).status().code() ==
        absl::StatusCode::kInvalidArgument);
  for (size_t i = 0; i < n; ++i) {
    REQUIRE(std::fabs(r[i] - r0[i]) <= 1e-6f * (std::fabs(g[i]) + std::fabs(r0[i])));
  }
}

TEST_CASE("a hint that keeps missing backs off") {
  // v doubles every step: the hint, set at last step's rank 1.5k, always
  // has far more than the cap above it.
  const size_t n = 1 << 18;
  const size_t k = n / 100;
  const auto base = Gradient(n, 5);
  TopKHint hint;
  std::vector<int> tried;  // steps whose hint's gather ran (and missed)
  for (int t = 0; t < 20; ++t) {
    std::vector<float> v = base;
    for (float& x : v) x = std::ldexp(x, t);
    std::vector<uint32_t> got, exact;
    const TopKStats stats = Select(v, k, t, 0, &got, &hint);
    SelectTopKExact(v, k, &exact);
    REQUIRE(got == exact);
    CHECK_FALSE(stats.hinted);
    if (stats.passes == 2) tried.push_back(t);
  }
  CHECK(tried == std::vector<int>{1, 2, 4, 8, 16});
}

TEST_CASE("candidates the caller gathered at the hint stand in for its gather") {
  const size_t n = 1 << 18;
  const size_t k = n / 1000;
  const auto v = Gradient(n, 6);
  std::vector<uint32_t> exact;
  SelectTopKExact(v, k, &exact);
  TopKHint due = {k, MagnitudeKey(KthMagnitude(v, k + k / 2))};
  REQUIRE(TopKHintDue(due, n, k));
  // What a caller's pass gathers at the hint's key.
  auto gather = [&](TopKHint* hint) {
    hint->indices.clear();
    hint->keys.clear();
    for (size_t i = 0; i < n; ++i) {
      if (MagnitudeKey(v[i]) >= hint->key) {
        hint->indices.push_back(static_cast<uint32_t>(i));
        hint->keys.push_back(MagnitudeKey(v[i]));
      }
    }
    hint->count = hint->indices.size();
    hint->gathered = true;
  };
  TopKHint hint = due;
  gather(&hint);
  std::vector<uint32_t> got;
  TopKStats stats = Select(v, k, 1, 0, &got, &hint);
  CHECK(got == exact);
  CHECK(stats.hinted);
  CHECK(stats.passes == 0);  // the caller's pass did it
  CHECK_FALSE(hint.gathered);
  // Gathered for a call that sits out its hint: ignored, and cleared.
  hint = due;
  hint.skip = 1;
  gather(&hint);
  stats = Select(v, k, 1, 0, &got, &hint);
  CHECK(got == exact);
  CHECK_FALSE(stats.hinted);
  CHECK(stats.passes == 1);
  CHECK_FALSE(hint.gathered);
  // Too few candidates: a miss, and the sample's gather runs.
  hint = {k, MagnitudeKey(KthMagnitude(v, k / 2))};
  gather(&hint);
  stats = Select(v, k, 1, 0, &got, &hint);
  CHECK(got == exact);
  CHECK(stats.sampled);
  CHECK(stats.passes == 1);
  CHECK(hint.misses == 1);
}

TEST_CASE("top-k keeps the lowest indices among ties") {
  std::vector<float> v(200000, 1.0f);
  v[5] = -3.0f;
  v[150000] = 2.0f;
  std::vector<uint32_t> got;
  Select(v, 10, 1, 0, &got);
  // Both larger ones, then the eight lowest-indexed ties.
  CHECK(got == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 150000});
}

TEST_CASE("top-k on adversarial inputs falls back and stays exact") {
  const size_t n = 1 << 18;
  std::vector<std::vector<float>> inputs;
  inputs.emplace_back(n, 0.0f);  // all equal
  std::vector<float> ramp(n);
  for (size_t i = 0; i < n; ++i) ramp[i] = static_cast<float>(i);
  inputs.push_back(ramp);  // sorted: stratified samples see it evenly
  std::vector<float> spikes(n, 0.0f);
  for (size_t i = 0; i < n; i += 997) spikes[i] = 1.0f + i;  // few nonzeros
  inputs.push_back(spikes);
  for (const auto& v : inputs) {
    for (size_t k : {size_t{1}, size_t{100}, size_t{2621}, size_t{30000}}) {
      std::vector<uint32_t> got, exact;
      Select(v, k, 3, 0, &got);
      SelectTopKExact(v, k, &exact);
      REQUIRE(got == exact);
      CheckIsTopK(v, k, got);
    }
  }
}

TEST_CASE("top-k edge sizes") {
  std::vector<uint32_t> got;
  Select(absl::Span<const float>(), 5, 0, 0, &got);
  CHECK(got.empty());
  const std::vector<float> v = {0.5f, -2.0f, 1.0f};
  Select(v, 0, 0, 0, &got);
  CHECK(got.empty());
  Select(v, 9, 0, 0, &got);  // k >= n keeps everything
  CHECK(got == std::vector<uint32_t>{0, 1, 2});
  Select(v, 1, 0, 0, &got);
  CHECK(got == std::vector<uint32_t>{1});
}

TEST_CASE("GatherAtLeast counts past its cap") {
  const std::vector<float> v = {0.1f, -0.5f, 0.7f, 0.0f, -0.9f};
  std::vector<uint32_t> got;
  CHECK(*GatherAtLeast(v.data(), nullptr, v.size(), 0.5f, 10, 1, &got) == 3);
  CHECK(got == std::vector<uint32_t>{1, 2, 4});
  CHECK(*GatherAtLeast(v.data(), nullptr, v.size(), 0.5f, 2, 1, &got) == 3);
  CHECK(got == std::vector<uint32_t>{1, 2});
  // With a residual, the gather selects on g + r and leaves g + r in r.
  std::vector<float> r = {0.4f, 0.5f, -0.7f, 0.0f, 0.0f};
  CHECK(*GatherAtLeast(v.data(), r.data(), v.size(), 0.5f, 10, 1, &got) == 2);
  CHECK(got == std::vector<uint32_t>{0, 4});
  CHECK(r == std::vector<float>{0.1f + 0.4f, 0.0f, 0.0f, 0.0f, -0.9f});
}

TEST_CASE("top-k with a residual selects on g + r and leaves it in r") {
  for (size_t n : {size_t{5000}, size_t{1} << 20}) {
    const auto g = Gradient(n, 1);
    const auto r0 = Gradient(n, 2);
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = g[i] + r0[i];
    for (size_t k : {n / 100, n / 2}) {
      auto r = r0;
      std::vector<uint32_t> fused, exact;
      Select(g.data(), r.data(), n, k, 5, 0, &fused);
      SelectTopKExact(v, k, &exact);
      CHECK(fused == exact);
      CHECK(r == v);
    }
  }
}

TEST_CASE("a non-finite v is refused and the residual restored") {
  // Sampled and exact paths; the bad element early, late, in g or in r.
  for (size_t n : {size_t{5000}, size_t{1} << 20}) {
    for (size_t at : {size_t{3}, n / 2, n - 1}) {
      for (bool in_residual : {false, true}) {
        INFO("n=" << n << " at=" << at << " in_residual=" << in_residual);
        auto g = Gradient(n, 3);
        auto r0 = Gradient(n, 4);
        (in_residual ? r0 : g)[at] = std::nanf("");
        auto r = r0;
        std::vector<uint32_t> got = {1, 2};
        const absl::StatusOr<TopKStats> stats =
            SelectTopK(g.data(), r.data(), n, n / 100, 5, 0, &got);
        CHECK(stats.status().code() == absl::StatusCode::kInvalidArgument);
        CHECK(got.empty());
        for (size_t i = 0; i < n; ++i) {
          if (i == at) continue;
          REQUIRE(std::fabs(r[i] - r0[i]) <= 1e-6f * (std::fabs(g[i]) + std::fabs(r0[i])));
        }
        CHECK(std::isnan(r[at]) == in_residual);
      }
    }
  }
  std::vector<float> inf = {1.0f, INFINITY};
  std::vector<uint32_t> got;
  CHECK_FALSE(GatherAtLeast(inf.data(), nullptr, 2, 0.5f, 2, 1, &got).ok());
  CHECK_FALSE(SelectTopK(inf, 1, 0, 1, &got).ok());
  std::vector<float> r = {0.0f, 0.0f};
  CHECK_FALSE(AddInto(inf.data(), r.data(), 2, 1).ok());
  CHECK(r == std::vector<float>{0.0f, 0.0f});
}

}  // namespace
}  // namespace leeway
