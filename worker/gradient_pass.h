// The passes a worker makes over a layer's gradient besides the codec's
// own (layer_compressor.h): the finite check with the gradient's sum of
// squares, fused with DGC's momentum correction for sparse codecs, and the
// residual's sum of squares for the controller's statistics. Vectorized
// loops (16 float lanes within blocks of 4,096 elements, blocks summed in
// double), one pass over memory each. Pure functions, thread-safe.
#ifndef LEEWAY_WORKER_GRADIENT_PASS_H_
#define LEEWAY_WORKER_GRADIENT_PASS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

// sum g_i^2; INVALID_ARGUMENT naming the first NaN or Inf.
absl::StatusOr<double> CheckedSumOfSquares(absl::Span<const float> g);

// u = momentum * velocity + g (all the same length), and sum g_i^2; a
// non-finite g is refused as above (u then holds a part of the result:
// the caller discards it).
absl::StatusOr<double> MomentumCorrect(float momentum, absl::Span<const float> velocity,
                                       absl::Span<const float> g, absl::Span<float> u);

// sum v_i^2.
double SumOfSquares(absl::Span<const float> v);

}  // namespace leeway

#endif  // LEEWAY_WORKER_GRADIENT_PASS_H_
