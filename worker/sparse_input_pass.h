// The one pass over memory that prepares a layer for a sparse push
// (layer_compressor.h): DGC's momentum correction u = m u + g, error
// feedback's v = r + u, the sums of squares the controller's statistics
// need, and, for the chunks whose top-k hint is due, the gather of v's
// candidates at the hint (topk_select.h), which SelectTopK then takes in
// place of a gather of its own. Done apart, the correction and the
// codec's gather read and wrote six streams of the layer's size
// (velocity, g and a spare u in, u out, then u and r in, r out); fused,
// five (velocity, g and r in, both written back in place).
//
// Non-finite input: each block of the pass is checked (every v finite,
// which catches NaN or Inf in g and any overflow of u or v) before it is
// written; a block that fails stops the pass, the blocks written before it
// are restored (velocity and r to within float rounding: r = v - u, then
// velocity = (u - g) / m), and INVALID_ARGUMENT names the first bad index.
// Runs on the caller's thread. Thread-compatible: the spans are the
// caller's.
#ifndef LEEWAY_WORKER_SPARSE_INPUT_PASS_H_
#define LEEWAY_WORKER_SPARSE_INPUT_PASS_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/topk_select.h"

namespace leeway {

// A gather to fuse into the pass: every index of [begin, end) of the layer
// whose v has a magnitude key at or above hint->key, stored relative to
// begin in hint->indices and hint->keys (at most `cap` of them; past it
// the pass stops storing), with hint->count and hint->gathered set. Ranges
// ascending and disjoint.
struct HintGather {
  size_t begin = 0;
  size_t end = 0;
  size_t cap = 0;
  TopKHint* hint = nullptr;
};

struct SparseInputSums {
  double gradient = 0;  // sum g_i^2
  double v = 0;         // sum v_i^2 (the residual before anything is sent)
};

// velocity, g and r the same length; momentum in [0, 1). With momentum 0,
// u = g and velocity is neither read nor written.
absl::StatusOr<SparseInputSums> FormSparseInput(float momentum, absl::Span<float> velocity,
                                                absl::Span<const float> g, absl::Span<float> r,
                                                absl::Span<const HintGather> gathers);

}  // namespace leeway

#endif  // LEEWAY_WORKER_SPARSE_INPUT_PASS_H_
