// Top-k selection by magnitude for the sparse codecs.
//
// Guarantee: the result is exact. SelectTopK returns, in ascending order,
// the indices of the k elements of largest |v|; among elements whose
// magnitude equals the k-th largest, the lower indices are kept. The result
// is therefore a function of (v, k) alone, the same on every path.
//
// Small tensors (or k close to n) take the exact path: one nth_element over
// the magnitudes, O(n). Large tensors take the DGC-style path: estimate a
// threshold from a strided random sample (seeded, so deterministic) set a
// few standard deviations below the expected k-th largest, gather the
// candidates at or above it in one pass, and refine exactly among them
// (nth_element over the candidates only). When the estimate misses (fewer
// than k candidates, or more than the candidate buffer holds) it retries
// once with a wider margin and then falls back to the exact path, so
// misses cost time, never accuracy. Stats say which path ran.
//
// Non-finite v: the gather (or, on the exact path, the pass forming v)
// checks v as it goes (encode_guard.h); a NaN or Inf is refused with
// INVALID_ARGUMENT, r restored to within float rounding.
//
// Thread-safety: pure; the gather pass runs on up to `threads` threads.
#ifndef LEEWAY_KERNELS_TOPK_SELECT_H_
#define LEEWAY_KERNELS_TOPK_SELECT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

struct TopKStats {
  bool sampled = false;  // the sampled path produced the result
  int passes = 0;        // full passes over v (gathers or the exact path)
  size_t candidates = 0; // of the last gather
};

// Below this many elements the exact path is always used.
constexpr size_t kTopKExactBelow = size_t{1} << 16;

// Selects on v = g + r, or v = g when r is null. With r, r holds v in full
// on return (error feedback keeps v for the elements not sent), formed in
// the same pass as the first gather. k is clamped to n; `indices` is
// overwritten.
absl::StatusOr<TopKStats> SelectTopK(const float* g, float* r, size_t n,
                                     size_t k, uint64_t seed, int threads,
                                     std::vector<uint32_t>* indices);

inline absl::StatusOr<TopKStats> SelectTopK(absl::Span<const float> v, size_t k,
                                            uint64_t seed, int threads,
                                            std::vector<uint32_t>* indices) {
  return SelectTopK(v.data(), nullptr, v.size(), k, seed, threads, indices);
}

// The exact path, exposed for tests and small tensors.
void SelectTopKExact(absl::Span<const float> v, size_t k,
                     std::vector<uint32_t>* indices);

// Indices (ascending) of every |v_i| >= threshold, v as in SelectTopK (and
// r likewise left holding v), at most `cap` of them; returns how many
// there are in all (which may exceed cap).
absl::StatusOr<size_t> GatherAtLeast(const float* g, float* r, size_t n,
                                     float threshold, size_t cap, int threads,
                                     std::vector<uint32_t>* indices);

// r += g over n elements, refusing a non-finite sum (r then restored).
absl::Status AddInto(const float* g, float* r, size_t n, int threads);

// The sampled path's plan, shared with the CUDA twin (codec_cuda.cc):
// whether (n, k) takes it, the sample size (elements at TopKSampleIndex,
// counter_random.h), the threshold's rank in the sample for each margin,
// how many candidates a gather may hold, and the exact refinement.
constexpr double kTopKMargins[] = {3.0, 8.0};
bool TopKSampled(size_t n, size_t k);
size_t TopKSampleSize(size_t n, size_t k);
size_t TopKThresholdRank(size_t n, size_t k, size_t m, double margin);
size_t TopKCandidateCap(size_t n, size_t rank, size_t m);
// The rank-th largest key of the sample.
uint32_t TopKThresholdKey(std::vector<uint32_t> sample, size_t rank);
// From candidates (ascending, holding every element at or above the k-th
// largest) and their keys, the exact top-k, ascending.
void KeepTopKOfCandidates(const std::vector<uint32_t>& candidates,
                          const std::vector<uint32_t>& keys, size_t k,
                          std::vector<uint32_t>* indices);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_TOPK_SELECT_H_
