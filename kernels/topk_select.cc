#include "kernels/topk_select.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "kernels/counter_random.h"
#include "kernels/half.h"
#include "kernels/parallel_for.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace {

constexpr size_t kGatherGrain = size_t{1} << 16;
constexpr size_t kMinSample = 8192;
constexpr double kSampleHits = 256;  // expected sample elements above the k-th

inline uint32_t Key(float x) { return MagnitudeKey(x); }

// The k-th largest of `keys` (1 <= k <= keys.size()); reorders keys.
uint32_t KthLargest(std::vector<uint32_t>& keys, size_t k) {
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(),
                   std::greater<uint32_t>());
  return keys[k - 1];
}

// From candidates `each(fn)` (ascending indices holding every element whose
// key is >= kth), keeps those above kth and the lowest-indexed ties, k in all.
template <typename ForEach>
void KeepTop(const float* v, uint32_t kth, size_t k,
             ForEach for_each, std::vector<uint32_t>* out) {
  size_t above = 0;
  for_each([&](uint32_t i) { above += Key(v[i]) > kth; });
  size_t ties = k - above;
  out->clear();
  out->reserve(k);
  for_each([&](uint32_t i) {
    const uint32_t key = Key(v[i]);
    if (key > kth || (key == kth && ties > 0)) {
      ties -= key == kth;
      out->push_back(i);
    }
  });
}

LEEWAY_VECTOR_CLONES
void AddRange(const float* __restrict g, float* __restrict r, size_t begin,
              size_t end) {
  for (size_t i = begin; i < end; ++i) r[i] += g[i];
}

// One block of the gather: appends i in [begin, end) with key(v_i) >= key;
// with r, stores v = g + r into r first.
LEEWAY_VECTOR_CLONES
void GatherBlock(const float* __restrict g, float* __restrict r, size_t begin,
                 size_t end, uint32_t key, std::vector<uint32_t>* out) {
  if (r == nullptr) {
    for (size_t i = begin; i < end; ++i) {
      if (Key(g[i]) >= key) out->push_back(static_cast<uint32_t>(i));
    }
    return;
  }
  for (size_t i = begin; i < end; ++i) {
    const float v = g[i] + r[i];
    r[i] = v;
    if (Key(v) >= key) out->push_back(static_cast<uint32_t>(i));
  }
}

size_t GatherKey(const float* g, float* r, size_t n, uint32_t key, size_t cap,
                 int threads, std::vector<uint32_t>* out) {
  std::vector<std::vector<uint32_t>> parts((n + kGatherGrain - 1) / kGatherGrain);
  ParallelFor(n, kGatherGrain, threads, [&](size_t begin, size_t end) {
    std::vector<uint32_t>& part = parts[begin / kGatherGrain];
    // This block's share of the candidates the threshold is set for.
    part.reserve(std::min(end - begin, (cap + 1) * (end - begin) / n + 16));
    GatherBlock(g, r, begin, end, key, &part);
  });
  out->clear();
  size_t count = 0;
  for (const auto& part : parts) {
    if (count < cap) {
      out->insert(out->end(), part.begin(),
                  part.begin() + std::min(part.size(), cap - count));
    }
    count += part.size();
  }
  return count;
}

}  // namespace

void SelectTopKExact(absl::Span<const float> values, size_t k,
                     std::vector<uint32_t>* indices) {
  const size_t n = values.size();
  const float* v = values.data();  // Span's operator[] checks bounds here
  k = std::min(k, n);
  indices->clear();
  if (k == 0) return;
  std::vector<uint32_t> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = Key(v[i]);
  const uint32_t kth = KthLargest(keys, k);
  auto all = [n](auto fn) {
    for (size_t i = 0; i < n; ++i) fn(static_cast<uint32_t>(i));
  };
  KeepTop(v, kth, k, all, indices);
}

void AddInto(const float* g, float* r, size_t n, int threads) {
  ParallelFor(n, kGatherGrain, threads, [&](size_t begin, size_t end) {
    AddRange(g, r, begin, end);
  });
}

size_t GatherAtLeast(const float* g, float* r, size_t n, float threshold,
                     size_t cap, int threads, std::vector<uint32_t>* indices) {
  return GatherKey(g, r, n, Key(threshold), cap, threads, indices);
}

bool TopKSampled(size_t n, size_t k) {
  return n >= kTopKExactBelow && 4 * k < n && k > 0;
}

size_t TopKSampleSize(size_t n, size_t k) {
  const double q = static_cast<double>(k) / n;
  return std::min(n / 8, std::max(kMinSample, static_cast<size_t>(kSampleHits / q)));
}

size_t TopKThresholdRank(size_t n, size_t k, size_t m, double margin) {
  // `margin` binomial standard deviations above the expected rank of the
  // k-th largest: a threshold just below it.
  const double expected = static_cast<double>(m) * k / n;
  return static_cast<size_t>(std::ceil(expected + margin * std::sqrt(expected) + 1));
}

size_t TopKCandidateCap(size_t n, size_t rank, size_t m) {
  return 2 * static_cast<size_t>(static_cast<double>(n) * rank / m) + 64;
}

uint32_t TopKThresholdKey(std::vector<uint32_t> sample, size_t rank) {
  return KthLargest(sample, rank);
}

void KeepTopKOfCandidates(absl::Span<const float> v,
                          const std::vector<uint32_t>& candidates, size_t k,
                          std::vector<uint32_t>* indices) {
  std::vector<uint32_t> keys(candidates.size());
  for (size_t j = 0; j < candidates.size(); ++j) keys[j] = Key(v[candidates[j]]);
  const uint32_t kth = KthLargest(keys, k);
  auto each = [&candidates](auto fn) {
    for (uint32_t i : candidates) fn(i);
  };
  KeepTop(v.data(), kth, k, each, indices);
}

TopKStats SelectTopK(const float* g, float* r, size_t n, size_t k,
                     uint64_t seed, int threads, std::vector<uint32_t>* indices) {
  k = std::min(k, n);
  TopKStats stats;
  const float* v = r != nullptr ? r : g;  // v, once r holds it
  if (!TopKSampled(n, k)) {
    if (r != nullptr) AddInto(g, r, n, threads);
    SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
    stats.passes = 1;
    return stats;
  }
  const size_t m = TopKSampleSize(n, k);
  std::vector<uint32_t> sample(m);
  for (size_t j = 0; j < m; ++j) {
    const size_t i = TopKSampleIndex(seed, j, n, m);
    sample[j] = Key(r != nullptr ? g[i] + r[i] : g[i]);
  }
  std::vector<uint32_t> candidates;
  bool formed = r == nullptr;  // whether v is in memory yet
  for (double margin : kTopKMargins) {
    const size_t rank = TopKThresholdRank(n, k, m, margin);
    if (rank >= m) break;
    const uint32_t threshold = TopKThresholdKey(sample, rank);
    const size_t cap = TopKCandidateCap(n, rank, m);
    const size_t count = formed ? GatherKey(v, nullptr, n, threshold, cap, threads, &candidates)
                                : GatherKey(g, r, n, threshold, cap, threads, &candidates);
    formed = true;
    ++stats.passes;
    stats.candidates = count;
    if (count > cap) break;     // threshold too low: go exact
    if (count < k) continue;    // too high: widen the margin
    KeepTopKOfCandidates(absl::MakeConstSpan(v, n), candidates, k, indices);
    stats.sampled = true;
    return stats;
  }
  if (!formed) AddInto(g, r, n, threads);
  SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
  ++stats.passes;
  return stats;
}

}  // namespace leeway
