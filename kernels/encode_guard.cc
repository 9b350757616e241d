#include "kernels/encode_guard.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "kernels/half.h"
#include "kernels/parallel_for.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace codec_internal {

LEEWAY_VECTOR_CLONES
uint32_t MaxMagnitudeKey(const float* __restrict g, const float* __restrict r,
                         size_t begin, size_t end) {
  uint32_t worst = 0;
  if (r == nullptr) {
    for (size_t i = begin; i < end; ++i) worst = std::max(worst, MagnitudeKey(g[i]));
  } else {
    for (size_t i = begin; i < end; ++i) {
      worst = std::max(worst, MagnitudeKey(g[i] + r[i]));
    }
  }
  return worst;
}

bool BlockFinite(const float* g, const float* r, size_t begin, size_t end) {
  return MaxMagnitudeKey(g, r, begin, end) < kNonFiniteKey;
}

absl::Status GuardedPass(size_t n, size_t grain, int threads, const float* g,
                         const float* r,
                         const std::function<size_t(size_t, size_t)>& pass,
                         const std::function<void(size_t, size_t)>& undo) {
  absl::Mutex mu;
  bool failed = false;
  std::vector<std::pair<size_t, size_t>> done;  // written ranges
  ParallelFor(n, grain, threads, [&](size_t begin, size_t end) {
    const size_t count = pass(begin, end);
    absl::MutexLock lock(&mu);
    if (count < end - begin) failed = true;
    if (count > 0) done.emplace_back(begin, begin + count);
  });
  if (!failed) return absl::OkStatus();
  for (const auto& [begin, end] : done) undo(begin, end);
  return NonFiniteError(g, r, n);
}

absl::Status CheckFinite(const float* g, const float* r, size_t n, int threads) {
  return GuardedPass(
      n, kGuardBlock, threads, g, r,
      [&](size_t begin, size_t end) {
        return CheckedBlocks(g, r, begin, end, kGuardBlock, [](size_t, size_t) {});
      },
      [](size_t, size_t) {});
}

absl::Status NonFiniteError(const float* g, const float* r, size_t n) {
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
  return absl::InvalidArgumentError("gradient or residual is not finite");
}

}  // namespace codec_internal
}  // namespace leeway
