#include "worker/gradient_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/half.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace {

constexpr size_t kBlock = 4096;
constexpr size_t kLanes = 16;

// One block: sum g^2 in lanes; *worst = the largest magnitude bits (Inf's
// or above: not finite). With u, also u = m * velocity + g.
LEEWAY_VECTOR_CLONES
float BlockPass(const float* __restrict g, size_t n, float momentum,
                const float* __restrict velocity, float* __restrict u,
                uint32_t* worst) {
  float lanes[kLanes] = {};
  uint32_t top = 0;
  const size_t whole = n / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float x = g[i + j];
      lanes[j] += x * x;
      top = std::max(top, MagnitudeKey(x));
      if (u != nullptr) u[i + j] = momentum * velocity[i + j] + x;
    }
  }
  for (size_t i = whole; i < n; ++i) {
    const float x = g[i];
    lanes[0] += x * x;
    top = std::max(top, MagnitudeKey(x));
    if (u != nullptr) u[i] = momentum * velocity[i] + x;
  }
  *worst = top;
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

// A block's float sum overflows only for values past 1e19: redone in double.
double Exact(const float* v, size_t n, float block_sum) {
  if (std::isfinite(block_sum)) return block_sum;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += double{v[i]} * v[i];
  return sum;
}

absl::StatusOr<double> Pass(absl::Span<const float> g, float momentum,
                            const float* velocity, float* u) {
  double total = 0.0;
  for (size_t begin = 0; begin < g.size(); begin += kBlock) {
    const size_t len = std::min(kBlock, g.size() - begin);
    uint32_t worst = 0;
    const float sum = BlockPass(g.data() + begin, len, momentum,
                                velocity != nullptr ? velocity + begin : nullptr,
                                u != nullptr ? u + begin : nullptr, &worst);
    if (worst < 0x7F800000u) {
      total += Exact(g.data() + begin, len, sum);
      continue;
    }
    for (size_t i = begin; i < begin + len; ++i) {
      if (!std::isfinite(g[i])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "gradient holds ", g[i], " at ", i, ": nothing was encoded"));
      }
    }
  }
  return total;
}

}  // namespace

absl::StatusOr<double> CheckedSumOfSquares(absl::Span<const float> g) {
  return Pass(g, 0.0f, nullptr, nullptr);
}

absl::StatusOr<double> MomentumCorrect(float momentum, absl::Span<const float> velocity,
                                       absl::Span<const float> g, absl::Span<float> u) {
  if (velocity.size() != g.size() || u.size() != g.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "momentum correction of ", g.size(), " elements with ", velocity.size(),
        " of velocity into ", u.size()));
  }
  return Pass(g, momentum, velocity.data(), u.data());
}

double SumOfSquares(absl::Span<const float> v) {
  double total = 0.0;
  for (size_t begin = 0; begin < v.size(); begin += kBlock) {
    const size_t len = std::min(kBlock, v.size() - begin);
    uint32_t worst = 0;
    total += Exact(v.data() + begin, len,
                   BlockPass(v.data() + begin, len, 0.0f, nullptr, nullptr, &worst));
  }
  return total;
}

}  // namespace leeway
