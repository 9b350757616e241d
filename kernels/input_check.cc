#include "kernels/input_check.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/dense_codec.h"
#include "kernels/parallel_for.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace codec_internal {
namespace {

constexpr size_t kLanes = 16;

inline uint32_t Bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

// One block: returns nonzero when some v is not finite; *sum = sum |v|.
// kLanes independent accumulators let the float sum vectorize without
// reassociation flags.
LEEWAY_VECTOR_CLONES
uint32_t CheckBlock(const float* __restrict g, const float* __restrict r,
                    size_t n, float* sum) {
  float acc[kLanes] = {};
  uint32_t bad = 0;
  const size_t whole = n / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float v = r != nullptr ? g[i + j] + r[i + j] : g[i + j];
      const uint32_t bits = Bits(v) & 0x7FFFFFFFu;
      bad |= bits >= 0x7F800000u;
      acc[j] += std::fabs(v);
    }
  }
  for (size_t i = whole; i < n; ++i) {
    const float v = r != nullptr ? g[i] + r[i] : g[i];
    bad |= (Bits(v) & 0x7FFFFFFFu) >= 0x7F800000u;
    acc[0] += std::fabs(v);
  }
  float total = 0.0f;
  for (float a : acc) total += a;
  *sum = total;
  return bad;
}

absl::Status Locate(const float* g, const float* r, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(g[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient holds ", g[i], " at index ", i));
    }
    if (r != nullptr && !std::isfinite(r[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("residual holds ", r[i], " at index ", i));
    }
    if (r != nullptr && !std::isfinite(g[i] + r[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient plus residual overflows at index ", i));
    }
  }
  return absl::InternalError("non-finite input not found again");
}

}  // namespace

absl::Status CheckInputs(const float* g, const float* r, size_t n, int threads,
                         double* abs_sum) {
  const size_t blocks = (n + kDenseGrain - 1) / kDenseGrain;
  std::vector<float> partial(blocks, 0.0f);
  std::vector<uint32_t> bad(blocks, 0);
  ParallelFor(n, kDenseGrain, threads, [&](size_t begin, size_t end) {
    for (size_t b = begin; b < end; b += kDenseGrain) {
      const size_t len = std::min(end, b + kDenseGrain) - b;
      bad[b / kDenseGrain] = CheckBlock(g + b, r != nullptr ? r + b : nullptr,
                                        len, &partial[b / kDenseGrain]);
    }
  });
  double sum = 0.0;
  for (size_t b = 0; b < blocks; ++b) {
    if (bad[b] != 0) return Locate(g, r, n);
    sum += partial[b];
  }
  if (abs_sum != nullptr) *abs_sum = sum;
  return absl::OkStatus();
}

}  // namespace codec_internal
}  // namespace leeway
