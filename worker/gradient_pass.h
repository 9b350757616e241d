// The passes a worker makes over a layer's gradient besides the codec's
// own for dense codecs (layer_compressor.h; sparse codecs take
// sparse_input_pass.h): the finite check with the gradient's sum of
// squares, and the residual's sum of squares for the controller's
// statistics. Vectorized
// loops (16 float lanes within blocks of 4,096 elements, blocks summed in
// double), one pass over memory each. Pure functions, thread-safe.
#ifndef LEEWAY_WORKER_GRADIENT_PASS_H_
#define LEEWAY_WORKER_GRADIENT_PASS_H_

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

// sum g_i^2; INVALID_ARGUMENT naming the first NaN or Inf.
absl::StatusOr<double> CheckedSumOfSquares(absl::Span<const float> g);

// sum v_i^2.
double SumOfSquares(absl::Span<const float> v);

// A block's sum of squares summed in float lanes, or, where that
// overflowed (values past 1e19), the block's v summed again in double.
double ExactBlockSum(const float* v, size_t n, float block_sum);

}  // namespace leeway

#endif  // LEEWAY_WORKER_GRADIENT_PASS_H_
