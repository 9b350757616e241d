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
// A caller that selects on the same tensor step after step (a worker's
// residual, a server's published difference) may carry a TopKHint from one
// call to the next: error feedback changes v little between steps, so the
// magnitude that ranked about 1.5k last time usually has between k and the
// candidate cap above it this time, and one gather at it replaces the
// sample, a strided random read of its own (at 0.1% density it cost more
// than the gather). Only where the sample is a large one (TopKHinted). A hint that misses costs that gather (which stops
// storing candidates past its cap); the sampled path then runs on v as the
// gather formed it. The result does not depend on the hint.
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
  bool hinted = false;   // the hint's gather produced the result
  bool sampled = false;  // the sampled path produced the result
  int passes = 0;        // full passes over v (gathers or the exact path)
  size_t candidates = 0; // of the last gather (past its cap: some number above it)
};

// Below this many elements the exact path is always used.
constexpr size_t kTopKExactBelow = size_t{1} << 16;

// What one selection leaves for the next on the same tensor: a magnitude
// key (half.h MagnitudeKey) to gather at, for the same k. SelectTopK sets
// it on every large-tensor selection; a hint for another k is ignored.
// After two misses in a row the hint sits out 1 call, then 3, then 7, so
// that a v whose scale drifts faster than the hint follows (a gradient
// growing step after step) pays for few wasted gathers.
struct TopKHint {
  size_t k = 0;
  uint32_t key = 0;     // 0: none
  uint32_t misses = 0;  // in a row
  uint32_t skip = 0;    // calls left to sit out
  // A caller that forms v in a pass of its own (a worker's momentum pass,
  // gradient_pass.h) may gather there when TopKHintDue: every index whose
  // key is >= `key`, ascending, with its key, at most TopKHintCap(k) of
  // them stored, and `count`, how many there were in all (any number past
  // the cap once it stopped storing). SelectTopK then uses them in place
  // of its own first gather, and clears `gathered` either way.
  bool gathered = false;
  size_t count = 0;
  std::vector<uint32_t> indices;
  std::vector<uint32_t> keys;
};

// Whether SelectTopK(n, k) with this hint starts with a gather at its key.
bool TopKHintDue(const TopKHint& hint, size_t n, size_t k);
// How many candidates that gather may hold.
size_t TopKHintCap(size_t k);

// Selects on v = g + r, or v = g when r is null. With r, r holds v in full
// on return (error feedback keeps v for the elements not sent), formed in
// the same pass as the first gather. k is clamped to n; `indices` is
// overwritten. `hint` may be null; when given it is read and updated.
absl::StatusOr<TopKStats> SelectTopK(const float* g, float* r, size_t n,
                                     size_t k, uint64_t seed, int threads,
                                     std::vector<uint32_t>* indices,
                                     TopKHint* hint = nullptr);

inline absl::StatusOr<TopKStats> SelectTopK(absl::Span<const float> v, size_t k,
                                            uint64_t seed, int threads,
                                            std::vector<uint32_t>* indices,
                                            TopKHint* hint = nullptr) {
  return SelectTopK(v.data(), nullptr, v.size(), k, seed, threads, indices, hint);
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
// Whether SelectTopK reads and updates a hint for (n, k): only where the
// sample it spares is a large one (CPU only; the CUDA twin has no hint).
bool TopKHinted(size_t n, size_t k);
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
