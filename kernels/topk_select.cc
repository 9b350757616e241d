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

// |x| as an integer key: for finite floats, keys order like magnitudes.
inline uint32_t Key(float x) { return FloatBits(x) & 0x7FFFFFFFu; }

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
    part.reserve(std::min(end - begin, cap + 1));
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

TopKStats SelectTopK(const float* g, float* r, size_t n, size_t k,
                     uint64_t seed, int threads, std::vector<uint32_t>* indices) {
  k = std::min(k, n);
  TopKStats stats;
  const float* v = r != nullptr ? r : g;  // v, once r holds it
  if (n < kTopKExactBelow || 4 * k >= n || k == 0) {
    if (r != nullptr) AddInto(g, r, n, threads);
    SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
    stats.passes = 1;
    return stats;
  }
  // A strided sample: one element at a random offset in each of m strata.
  const double q = static_cast<double>(k) / n;
  const size_t m = std::min(n / 8, std::max(kMinSample,
                                            static_cast<size_t>(kSampleHits / q)));
  const uint64_t sampling = StreamSeed(seed, RandomStream::kSampling);
  std::vector<uint32_t> sample(m);
  for (size_t j = 0; j < m; ++j) {
    const double at = (j + CounterUniform(sampling, j)) * n / m;
    const size_t i = std::min(n - 1, static_cast<size_t>(at));
    sample[j] = Key(r != nullptr ? g[i] + r[i] : g[i]);
  }
  const double expected = m * q;
  std::vector<uint32_t> candidates;
  std::vector<uint32_t> scratch;
  bool formed = r == nullptr;  // whether v is in memory yet
  for (double margin : {3.0, 8.0}) {
    // Rank r in the sample sits `margin` standard deviations (binomial)
    // above the expected rank of the k-th largest: a threshold just below it.
    const size_t rank = static_cast<size_t>(
        std::ceil(expected + margin * std::sqrt(expected) + 1));
    if (rank >= m) break;
    scratch = sample;
    const uint32_t threshold = KthLargest(scratch, rank);
    const size_t cap = 2 * static_cast<size_t>(static_cast<double>(n) * rank / m) + 64;
    const size_t count = formed ? GatherKey(v, nullptr, n, threshold, cap, threads, &candidates)
                                : GatherKey(g, r, n, threshold, cap, threads, &candidates);
    formed = true;
    ++stats.passes;
    stats.candidates = count;
    if (count > cap) break;     // threshold too low: go exact
    if (count < k) continue;    // too high: widen the margin
    scratch.resize(count);
    for (size_t j = 0; j < count; ++j) scratch[j] = Key(v[candidates[j]]);
    const uint32_t kth = KthLargest(scratch, k);
    auto each = [&candidates](auto fn) {
      for (uint32_t i : candidates) fn(i);
    };
    KeepTop(v, kth, k, each, indices);
    stats.sampled = true;
    return stats;
  }
  if (!formed) AddInto(g, r, n, threads);
  SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
  ++stats.passes;
  return stats;
}

}  // namespace leeway
