#include "kernels/indexed_prefetch.h"

#include <algorithm>

namespace leeway {

void ScatterValues(absl::Span<const uint32_t> indices, absl::Span<const float> values,
                   absl::Span<float> dest) {
  const size_t count = std::min(indices.size(), values.size());
  const uint32_t* at = indices.data();
  float* out = dest.data();
  const size_t n = dest.size();
  for (size_t j = 0; j < count; ++j) {
    // A prefetch of an index the loop then skips touches nothing.
    if (j + kIndexPrefetchDistance < count && at[j + kIndexPrefetchDistance] < n) {
      __builtin_prefetch(out + at[j + kIndexPrefetchDistance], 1);
    }
    if (at[j] < n) out[at[j]] = values[j];
  }
}

}  // namespace leeway
