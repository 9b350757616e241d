#include "kernels/topk_select.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>

#include "kernels/counter_random.h"
#include "kernels/encode_guard.h"
#include "kernels/gather_block.h"
#include "kernels/half.h"
#include "kernels/parallel_for.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace {

constexpr size_t kGatherGrain = size_t{1} << 16;
// The sample: kSampleHits expected elements above the k-th (3 binomial
// standard deviations are then a quarter of it, so the gather keeps about
// 1.5k candidates), at least kMinSample elements, at most 1 in
// kMaxSampleShare of the tensor. The sample is a strided random read and a
// selection of its own, so at 0.1% density the old 256 hits (1 in 8 of a
// 2.4M-element tensor) cost 5x the gather pass itself.
constexpr size_t kMinSample = 4096;
constexpr double kSampleHits = 64;
constexpr size_t kMaxSampleShare = 32;
// A hint replaces samples of at least 1 in kHintedSampleShare of the
// tensor: a sparser sample costs little next to the gather (at 1% of a
// 2.4M-element layer it reads 1 in 369), less than a hint's misses and
// its second selection among the candidates.
constexpr size_t kHintedSampleShare = 128;

inline uint32_t Key(float x) { return MagnitudeKey(x); }

// The k-th largest of `keys` (1 <= k <= keys.size()); reorders keys.
uint32_t KthLargest(std::vector<uint32_t>& keys, size_t k) {
  std::nth_element(keys.begin(), keys.begin() + (k - 1), keys.end(),
                   std::greater<uint32_t>());
  return keys[k - 1];
}

// From candidates `each(fn)` (fn(index, key), ascending indices, holding
// every element whose key is >= kth), keeps those above kth and the
// lowest-indexed ties, k in all.
template <typename ForEach>
void KeepTop(uint32_t kth, size_t k, ForEach for_each, std::vector<uint32_t>* out) {
  size_t above = 0;
  for_each([&](uint32_t, uint32_t key) { above += key > kth; });
  size_t ties = k - above;
  out->clear();
  out->reserve(k);
  for_each([&](uint32_t i, uint32_t key) {
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

// The undo of a range whose r was set to v = g + r.
LEEWAY_VECTOR_CLONES
void SubtractRange(const float* __restrict g, float* __restrict r, size_t begin,
                   size_t end) {
  for (size_t i = begin; i < end; ++i) r[i] -= g[i];
}

// A guarded pass over [0, n) that writes r = v block by block through
// write(begin, end) (or only reads, without r); undone by subtraction.
template <typename Write>
absl::Status FormV(const float* g, float* r, size_t n, size_t grain, int threads,
                   Write write) {
  return codec_internal::GuardedPass(
      n, grain, threads, g, r,
      [&](size_t begin, size_t end) {
        return codec_internal::CheckedBlocks(g, r, begin, end,
                                             codec_internal::kGuardBlock, write);
      },
      [&](size_t begin, size_t end) {
        if (r != nullptr) SubtractRange(g, r, begin, end);
      });
}

// The candidates of a gather: indices ascending, with their keys.
struct Candidates {
  std::vector<uint32_t> indices;
  std::vector<uint32_t> keys;
};

// Gathers every index whose key is >= key (at most cap of them) into out;
// returns how many there are in all. With stop_past_cap, once more than
// cap are stored the pass only forms v (a threshold far too low would
// otherwise store most of the tensor), and the count returned is then just
// some number above cap.
absl::StatusOr<size_t> GatherKey(const float* g, float* r, size_t n,
                                 uint32_t key, size_t cap, int threads,
                                 Candidates* out, bool stop_past_cap = false) {
  out->indices.clear();
  out->keys.clear();
  // Each grain's candidates in a part of its own (a grain is one thread's).
  std::vector<Candidates> parts((n + kGatherGrain - 1) / kGatherGrain);
  std::atomic<size_t> stored{0};
  absl::Status formed = FormV(g, r, n, kGatherGrain, threads, [&](size_t begin, size_t end) {
    if (stop_past_cap && stored.load(std::memory_order_relaxed) > cap) {
      if (r != nullptr) AddRange(g, r, begin, end);
      return;
    }
    Candidates& part = parts[begin / kGatherGrain];
    if (part.indices.capacity() == 0) {  // the grain's share of the cap, and some
      const size_t share = std::min(kGatherGrain, (cap + 1) * kGatherGrain / n + 16);
      part.indices.reserve(share);
      part.keys.reserve(share);
    }
    const size_t before = part.indices.size();
    codec_internal::GatherBlock(g, r, begin, end, key, &part.indices, &part.keys);
    if (stop_past_cap) {
      stored.fetch_add(part.indices.size() - before, std::memory_order_relaxed);
    }
  });
  if (!formed.ok()) return formed;
  size_t count = 0;
  for (const Candidates& part : parts) {
    if (count < cap) {
      const size_t take = std::min(part.indices.size(), cap - count);
      out->indices.insert(out->indices.end(), part.indices.begin(),
                          part.indices.begin() + take);
      out->keys.insert(out->keys.end(), part.keys.begin(), part.keys.begin() + take);
    }
    count += part.indices.size();
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
  auto all = [n, v](auto fn) {
    for (size_t i = 0; i < n; ++i) fn(static_cast<uint32_t>(i), Key(v[i]));
  };
  KeepTop(kth, k, all, indices);
}

absl::Status AddInto(const float* g, float* r, size_t n, int threads) {
  return FormV(g, r, n, kGatherGrain, threads,
               [&](size_t begin, size_t end) { AddRange(g, r, begin, end); });
}

absl::StatusOr<size_t> GatherAtLeast(const float* g, float* r, size_t n,
                                     float threshold, size_t cap, int threads,
                                     std::vector<uint32_t>* indices) {
  Candidates candidates;
  absl::StatusOr<size_t> count = GatherKey(g, r, n, Key(threshold), cap, threads, &candidates);
  indices->swap(candidates.indices);
  return count;
}

bool TopKSampled(size_t n, size_t k) {
  return n >= kTopKExactBelow && 4 * k < n && k > 0;
}

bool TopKHinted(size_t n, size_t k) {
  return TopKSampled(n, k) && TopKSampleSize(n, k) * kHintedSampleShare >= n;
}

size_t TopKSampleSize(size_t n, size_t k) {
  const double q = static_cast<double>(k) / n;
  return std::min(n / kMaxSampleShare, std::max(kMinSample, static_cast<size_t>(kSampleHits / q)));
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

namespace {

// KeepTop over candidates and their keys, given the k-th largest key.
void KeepTopOfCandidates(uint32_t kth, size_t k, const std::vector<uint32_t>& candidates,
                         const std::vector<uint32_t>& keys, std::vector<uint32_t>* indices) {
  auto each = [&](auto fn) {
    for (size_t j = 0; j < candidates.size(); ++j) fn(candidates[j], keys[j]);
  };
  KeepTop(kth, k, each, indices);
}

}  // namespace

void KeepTopKOfCandidates(const std::vector<uint32_t>& candidates,
                          const std::vector<uint32_t>& keys, size_t k,
                          std::vector<uint32_t>* indices) {
  std::vector<uint32_t> order = keys;
  KeepTopOfCandidates(KthLargest(order, k), k, candidates, keys, indices);
}

// A hint's gather may keep up to this many candidates; the hint aims at
// about 1.5k. The room above is for v's growth between steps: early in a
// run with momentum the residual's scale grows by a quarter to two fifths
// a step, which multiplies the count above a fixed threshold 2-3x for
// tails like 1/x^3.
size_t TopKHintCap(size_t k) { return 8 * k + 64; }

bool TopKHintDue(const TopKHint& hint, size_t n, size_t k) {
  k = std::min(k, n);
  return TopKHinted(n, k) && hint.k == k && hint.key != 0 && hint.skip == 0;
}

namespace {

// Moves `hint` to next's key and k, keeping its back-off.
void SetHint(const TopKHint& next, TopKHint* hint) {
  if (next.k != hint->k) {
    hint->misses = 0;
    hint->skip = 0;
  }
  hint->k = next.k;
  hint->key = next.key;
}

// A hint a tenth below the magnitude of `key`.
TopKHint HintBelow(size_t k, uint32_t key) { return {k, Key(0.9f * BitsFloat(key))}; }

// From a gather's candidates (every key >= the k-th largest, at least k of
// them) the exact top k, and the next hint: the key ranked about 1.5k, or,
// with fewer candidates than that, a tenth below the smallest of them. One
// copy of the keys serves both selections.
void KeepTopKAndHint(const Candidates& candidates, size_t k, std::vector<uint32_t>* indices,
                     TopKHint* hint) {
  const std::vector<uint32_t>& keys = candidates.keys;
  const size_t target = k + k / 2 + 1;
  if (keys.size() < target) {
    KeepTopKOfCandidates(candidates.indices, keys, k, indices);
    SetHint(HintBelow(k, *std::min_element(keys.begin(), keys.end())), hint);
    return;
  }
  std::vector<uint32_t> order = keys;
  SetHint({k, KthLargest(order, target)}, hint);
  // The k largest are among the first `target` of order now.
  std::nth_element(order.begin(), order.begin() + (k - 1), order.begin() + target,
                   std::greater<uint32_t>());
  KeepTopOfCandidates(order[k - 1], k, candidates.indices, keys, indices);
}

}  // namespace

absl::StatusOr<TopKStats> SelectTopK(const float* g, float* r, size_t n,
                                     size_t k, uint64_t seed, int threads,
                                     std::vector<uint32_t>* indices,
                                     TopKHint* hint) {
  k = std::min(k, n);
  indices->clear();
  TopKStats stats;
  const float* v = r != nullptr ? r : g;  // v, once r holds it
  // Before the exact path, unless a gather did it: v formed and checked.
  auto form_v = [&] {
    return r != nullptr ? AddInto(g, r, n, threads)
                        : codec_internal::CheckFinite(g, nullptr, n, threads);
  };
  if (!TopKSampled(n, k)) {
    absl::Status formed = form_v();
    if (!formed.ok()) return formed;
    SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
    stats.passes = 1;
    return stats;
  }
  Candidates candidates;
  bool formed = false;  // whether a gather formed and checked v
  // Whether `count` candidates (those in `candidates`) hold the top k.
  auto keep = [&](size_t count, size_t cap) {
    stats.candidates = count;
    if (count < k || count > cap) return false;
    if (hint != nullptr) {
      KeepTopKAndHint(candidates, k, indices, hint);
    } else {
      KeepTopKOfCandidates(candidates.indices, candidates.keys, k, indices);
    }
    return true;
  };
  // One gather with its threshold and cap; true when it holds the top k.
  auto gather = [&](uint32_t threshold, size_t cap) -> absl::StatusOr<bool> {
    const absl::StatusOr<size_t> gathered =
        formed ? GatherKey(v, nullptr, n, threshold, cap, threads, &candidates, true)
               : GatherKey(g, r, n, threshold, cap, threads, &candidates, true);
    if (!gathered.ok()) return gathered.status();
    formed = true;
    ++stats.passes;
    return keep(*gathered, cap);
  };
  // The caller's gather at the hint, when it is for this call.
  const bool given = hint != nullptr && hint->gathered;
  if (hint != nullptr) hint->gathered = false;
  if (!TopKHinted(n, k)) hint = nullptr;
  if (hint != nullptr && hint->k == k && hint->key != 0) {
    if (hint->skip > 0) {
      --hint->skip;
    } else {
      absl::StatusOr<bool> kept;
      if (given) {
        candidates.indices.swap(hint->indices);
        candidates.keys.swap(hint->keys);
        kept = keep(hint->count, TopKHintCap(k));
      } else {
        kept = gather(hint->key, TopKHintCap(k));
      }
      if (!kept.ok()) return kept.status();
      if (*kept) {
        hint->misses = 0;
        stats.hinted = true;
        return stats;
      }
      // A miss costs about one stream over v more than the sample alone;
      // misses in a row mean v moves faster than the hint follows: sit out
      // 0, 1, 3, then 7 calls.
      hint->misses = std::min(hint->misses + 1, 4u);
      hint->skip = (1u << (hint->misses - 1)) - 1;
    }
  }
  const size_t m = TopKSampleSize(n, k);
  std::vector<uint32_t> sample(m);
  const bool sum = r != nullptr && !formed;  // v = g + r still to be formed
  for (size_t j = 0; j < m; ++j) {
    const size_t i = TopKSampleIndex(seed, j, n, m);
    sample[j] = Key(sum ? g[i] + r[i] : v[i]);
  }
  for (double margin : kTopKMargins) {
    const size_t rank = TopKThresholdRank(n, k, m, margin);
    if (rank >= m) break;
    const size_t cap = TopKCandidateCap(n, rank, m);
    const absl::StatusOr<bool> kept = gather(TopKThresholdKey(sample, rank), cap);
    if (!kept.ok()) return kept.status();
    if (*kept) {
      stats.sampled = true;
      return stats;
    }
    if (stats.candidates > cap) break;  // threshold too low: go exact
  }
  if (!formed) {
    absl::Status added = form_v();
    if (!added.ok()) return added;
  }
  SelectTopKExact(absl::MakeConstSpan(v, n), k, indices);
  ++stats.passes;
  if (hint != nullptr) {
    uint32_t kth = Key(v[indices->front()]);
    for (uint32_t i : *indices) kth = std::min(kth, Key(v[i]));
    SetHint(HintBelow(k, kth), hint);
  }
  return stats;
}

}  // namespace leeway
