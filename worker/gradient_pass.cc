#include "worker/gradient_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/half.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace {

constexpr size_t kBlock = 4096;
constexpr size_t kLanes = 16;

// One block: sum g^2 in lanes; *worst = the largest magnitude bits (Inf's
// or above: not finite). Written with vector types, two of 8 lanes: left
// to itself GCC reduced a scalar maximum across the vector every step, or
// (at -O3) interleaved the lanes with permutes. Cloned for AVX2.
typedef float Floats8 __attribute__((vector_size(32)));
typedef uint32_t Keys8 __attribute__((vector_size(32)));

LEEWAY_VECTOR_CLONES
float BlockSums(const float* __restrict g, size_t n, uint32_t* worst) {
  static_assert(kLanes == 16, "two vectors of 8 lanes");
  Floats8 sums[2] = {};
  Keys8 tops[2] = {};
  const size_t whole = n / kLanes * kLanes;
  for (size_t i = 0; i < whole; i += kLanes) {
    for (size_t h = 0; h < 2; ++h) {
      Floats8 x;
      std::memcpy(&x, g + i + 8 * h, sizeof(x));
      sums[h] += x * x;
      Keys8 bits;
      std::memcpy(&bits, &x, sizeof(bits));
      bits &= 0x7FFFFFFFu;
      tops[h] = tops[h] > bits ? tops[h] : bits;
    }
  }
  float lanes[kLanes];
  uint32_t top_lanes[kLanes];
  std::memcpy(lanes, sums, sizeof(lanes));
  std::memcpy(top_lanes, tops, sizeof(top_lanes));
  for (size_t i = whole; i < n; ++i) {
    const float x = g[i];
    lanes[0] += x * x;
    top_lanes[0] = std::max(top_lanes[0], MagnitudeKey(x));
  }
  uint32_t top = 0;
  for (uint32_t t : top_lanes) top = std::max(top, t);
  *worst = top;
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

absl::StatusOr<double> Pass(absl::Span<const float> g) {
  double total = 0.0;
  for (size_t begin = 0; begin < g.size(); begin += kBlock) {
    const size_t len = std::min(kBlock, g.size() - begin);
    uint32_t worst = 0;
    const float sum = BlockSums(g.data() + begin, len, &worst);
    if (worst < 0x7F800000u) {
      total += ExactBlockSum(g.data() + begin, len, sum);
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

double ExactBlockSum(const float* v, size_t n, float block_sum) {
  if (std::isfinite(block_sum)) return block_sum;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) sum += double{v[i]} * v[i];
  return sum;
}

absl::StatusOr<double> CheckedSumOfSquares(absl::Span<const float> g) { return Pass(g); }

double SumOfSquares(absl::Span<const float> v) {
  double total = 0.0;
  for (size_t begin = 0; begin < v.size(); begin += kBlock) {
    const size_t len = std::min(kBlock, v.size() - begin);
    uint32_t worst = 0;
    total += ExactBlockSum(v.data() + begin, len,
                   BlockSums(v.data() + begin, len, &worst));
  }
  return total;
}

}  // namespace leeway
