// Internal to the codec library: the read-only first pass of Encode. It
// forms v = g + r (or v = g without a residual) in registers, refuses any
// non-finite v (which catches NaN or Inf in g or r, and overflow of the
// sum) before anything is written, and sums |v| for the sign codec's scale.
// The sum runs over fixed blocks in a fixed order, so it does not depend on
// the thread count. Pure, thread-safe.
#ifndef LEEWAY_KERNELS_INPUT_CHECK_H_
#define LEEWAY_KERNELS_INPUT_CHECK_H_

#include <cstddef>

#include "absl/status/status.h"

namespace leeway {
namespace codec_internal {

// r may be null. On success *abs_sum = sum |v| (when abs_sum is not null).
absl::Status CheckInputs(const float* g, const float* r, size_t n, int threads,
                         double* abs_sum);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_INPUT_CHECK_H_
