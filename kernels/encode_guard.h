// Internal to the codec library: how Encode refuses non-finite input
// without a pass over memory of its own.
//
// Every encoder's first pass goes block by block, each block small enough
// to stay in cache between two loops: the first loop checks that every
// v = g + r of the block (v = g without a residual) is finite, which
// catches NaN or Inf in g or r and overflow of the sum; only then does the
// second loop write anything of that block. A pass stops at its first
// non-finite block. GuardedPass runs such a pass over [0, n) on the kernel
// pool and, when any part stopped, calls the encoder's undo on every range
// that was written (restoring r to within float rounding: r = v - g, with v
// rebuilt from what was written) and returns INVALID_ARGUMENT naming the
// first non-finite index. Memory is read once either way; a refusal costs
// the undo. Pure apart from g and r, thread-safe.
#ifndef LEEWAY_KERNELS_ENCODE_GUARD_H_
#define LEEWAY_KERNELS_ENCODE_GUARD_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace leeway {
namespace codec_internal {

// Elements a guard block holds by default: g and r of 4,096 floats, 32 KiB.
constexpr size_t kGuardBlock = 4096;

// The largest magnitude key (half.h MagnitudeKey) of v over [begin, end);
// r may be null. At or above kNonFiniteKey some v is NaN or Inf.
constexpr uint32_t kNonFiniteKey = 0x7F800000u;
uint32_t MaxMagnitudeKey(const float* g, const float* r, size_t begin, size_t end);

// Whether every v in [begin, end) is finite; r may be null.
bool BlockFinite(const float* g, const float* r, size_t begin, size_t end);

// Runs write(b, e) over consecutive blocks of [begin, end) of at most
// `block` elements, each after BlockFinite passed; returns how many
// elements from begin were written (end - begin unless a block failed).
template <typename Write>
size_t CheckedBlocks(const float* g, const float* r, size_t begin, size_t end,
                     size_t block, Write&& write) {
  size_t at = begin;
  while (at < end) {
    const size_t stop = std::min(end, at + block);
    if (!BlockFinite(g, r, at, stop)) break;
    write(at, stop);
    at = stop;
  }
  return at - begin;
}

// A guarded pass: pass(begin, end) handles a range of [0, n) (sizes
// multiples of grain) and returns how many elements from begin it wrote
// (CheckedBlocks' count); undo(begin, end) restores a written range. OK
// when every range was written in full.
absl::Status GuardedPass(size_t n, size_t grain, int threads, const float* g,
                         const float* r,
                         const std::function<size_t(size_t, size_t)>& pass,
                         const std::function<void(size_t, size_t)>& undo);

// A check pass of its own, for encoders with no first pass to fuse it into
// (they read only part of v): OK when every v is finite.
absl::Status CheckFinite(const float* g, const float* r, size_t n, int threads);

// The refusal for input that holds a non-finite v: the first index, and
// whether g, r or their sum is to blame.
absl::Status NonFiniteError(const float* g, const float* r, size_t n);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_ENCODE_GUARD_H_
