#include "worker/sparse_input_pass.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/encode_guard.h"
#include "kernels/gather_block.h"
#include "kernels/half.h"
#include "kernels/vector_clones.h"
#include "worker/gradient_pass.h"

namespace leeway {
namespace {

// Velocity, g and r of a block take 24 KiB: still in L1 (48 KiB on the
// Zen 5 and recent Intel cores) when the write and the gather reread it.
constexpr size_t kBlock = 2048;

typedef float Floats8 __attribute__((vector_size(32)));
typedef uint32_t Keys8 __attribute__((vector_size(32)));

struct BlockCheck {
  uint32_t worst = 0;  // the largest magnitude bits of v: >= Inf's when not finite
  float gradient = 0;  // sum g^2
  float v = 0;         // sum v^2
};

// Reads a block and writes nothing: v's worst magnitude and the sums. u
// rounds as the write below rounds it (the library builds with
// -ffp-contract=off: no fused multiply-add in one and not the other).
template <bool kMomentum>
__attribute__((always_inline)) inline BlockCheck Check(const float* __restrict g,
                                                       const float* __restrict velocity,
                                                       const float* __restrict r, size_t n,
                                                       float momentum) {
  Floats8 g_sums = {};
  Floats8 v_sums = {};
  Keys8 tops = {};
  const size_t whole = n / 8 * 8;
  for (size_t i = 0; i < whole; i += 8) {
    Floats8 x, old, u;
    std::memcpy(&x, g + i, sizeof(x));
    std::memcpy(&old, r + i, sizeof(old));
    u = x;
    if (kMomentum) {
      Floats8 w;
      std::memcpy(&w, velocity + i, sizeof(w));
      u = momentum * w + x;
    }
    const Floats8 v = old + u;
    g_sums += x * x;
    v_sums += v * v;
    Keys8 bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bits &= 0x7FFFFFFFu;
    tops = tops > bits ? tops : bits;
  }
  BlockCheck out;
  for (int lane = 0; lane < 8; ++lane) {
    out.gradient += g_sums[lane];
    out.v += v_sums[lane];
    out.worst = std::max(out.worst, tops[lane]);
  }
  for (size_t i = whole; i < n; ++i) {
    const float u = kMomentum ? momentum * velocity[i] + g[i] : g[i];
    const float v = r[i] + u;
    out.gradient += g[i] * g[i];
    out.v += v * v;
    out.worst = std::max(out.worst, MagnitudeKey(v));
  }
  return out;
}

LEEWAY_VECTOR_CLONES
BlockCheck CheckMomentum(const float* g, const float* velocity, const float* r, size_t n,
                         float momentum) {
  return Check<true>(g, velocity, r, n, momentum);
}

LEEWAY_VECTOR_CLONES
BlockCheck CheckPlain(const float* g, const float* r, size_t n) {
  return Check<false>(g, nullptr, r, n, 0.0f);
}

LEEWAY_VECTOR_CLONES
void WriteMomentum(const float* __restrict g, float* __restrict velocity,
                   float* __restrict r, size_t n, float momentum) {
  for (size_t i = 0; i < n; ++i) {
    const float u = momentum * velocity[i] + g[i];
    velocity[i] = u;
    r[i] = r[i] + u;
  }
}

LEEWAY_VECTOR_CLONES
void WritePlain(const float* __restrict g, float* __restrict r, size_t n) {
  for (size_t i = 0; i < n; ++i) r[i] = r[i] + g[i];
}

// Restores [0, n) after a refused pass, to within float rounding.
void Undo(float momentum, float* velocity, const float* g, float* r, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float u = momentum > 0 ? velocity[i] : g[i];
    r[i] -= u;
    if (momentum > 0) velocity[i] = (u - g[i]) / momentum;
  }
}

absl::Status Refusal(float momentum, const float* velocity, const float* g, const float* r,
                     size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    if (!std::isfinite(g[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("gradient holds ", g[i], " at ", i, ": nothing was encoded"));
    }
    const float u = momentum > 0 ? momentum * velocity[i] + g[i] : g[i];
    if (!std::isfinite(r[i] + u)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "momentum-corrected gradient plus residual overflows at ", i,
          ": nothing was encoded"));
    }
  }
  return absl::InvalidArgumentError("gradient or residual is not finite");
}

absl::Status CheckGathers(absl::Span<const HintGather> gathers, size_t n) {
  size_t previous = 0;
  for (const HintGather& gather : gathers) {
    if (gather.hint == nullptr || gather.begin < previous || gather.end <= gather.begin ||
        gather.end > n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gather [", gather.begin, ", ", gather.end, ") is not within [", previous, ", ",
          n, ") or has no hint"));
    }
    previous = gather.end;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SparseInputSums> FormSparseInput(float momentum, absl::Span<float> velocity,
                                                absl::Span<const float> g, absl::Span<float> r,
                                                absl::Span<const HintGather> gathers) {
  const size_t n = g.size();
  if (r.size() != n || (momentum > 0 && velocity.size() != n)) {
    return absl::InvalidArgumentError(absl::StrCat("a pass over ", n, " elements with ",
                                                   velocity.size(), " of velocity and ",
                                                   r.size(), " of residual"));
  }
  if (!(momentum >= 0.0f && momentum < 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("momentum ", momentum, " not in [0, 1)"));
  }
  absl::Status valid = CheckGathers(gathers, n);
  if (!valid.ok()) return valid;
  for (const HintGather& gather : gathers) {
    gather.hint->gathered = false;
    gather.hint->indices.clear();
    gather.hint->keys.clear();
    gather.hint->indices.reserve(gather.cap + 1);
    gather.hint->keys.reserve(gather.cap + 1);
  }
  const bool with_momentum = momentum > 0;
  float* w = velocity.data();
  float* rv = r.data();
  const float* gp = g.data();
  SparseInputSums sums;
  size_t at = 0;
  size_t next = 0;  // the first gather not begun
  while (at < n) {
    // [at, stop) lies inside one gather, or outside all of them.
    const HintGather* gather = nullptr;
    size_t stop = n;
    if (next < gathers.size()) {
      if (at < gathers[next].begin) {
        stop = gathers[next].begin;
      } else {
        gather = &gathers[next++];
        stop = gather->end;
      }
    }
    for (size_t b = at; b < stop; b += kBlock) {
      const size_t len = std::min(kBlock, stop - b);
      const BlockCheck check = with_momentum ? CheckMomentum(gp + b, w + b, rv + b, len, momentum)
                                             : CheckPlain(gp + b, rv + b, len);
      if (check.worst >= codec_internal::kNonFiniteKey) {
        absl::Status refused = Refusal(momentum, w, gp, rv, b, b + len);
        Undo(momentum, w, gp, rv, b);
        return refused;
      }
      if (with_momentum) {
        WriteMomentum(gp + b, w + b, rv + b, len, momentum);
      } else {
        WritePlain(gp + b, rv + b, len);
      }
      sums.gradient += ExactBlockSum(gp + b, len, check.gradient);
      sums.v += ExactBlockSum(rv + b, len, check.v);
      if (gather != nullptr && gather->hint->indices.size() <= gather->cap) {
        const float* base = rv + gather->begin;  // indices relative to the chunk
        codec_internal::GatherBlock(base, nullptr, b - gather->begin, b + len - gather->begin,
                                    gather->hint->key, &gather->hint->indices,
                                    &gather->hint->keys);
      }
    }
    at = stop;
  }
  for (const HintGather& gather : gathers) {
    gather.hint->count = gather.hint->indices.size();
    gather.hint->gathered = true;
  }
  return sums;
}

}  // namespace leeway
