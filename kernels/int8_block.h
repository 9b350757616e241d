// The int8 codec's buckets, for the CPU codecs. For each bucket of
// v = g + r (v = g without a residual): scale = max |v| / 127, stored
// first, and one level per element, floor(v / scale + u) clamped to
// [-127, 127] with u the seeded per-element dither (counter_random.h
// DitherUniform): stochastic rounding, unbiased. With r, error feedback
// leaves r = v - level * scale. Body: the buckets' scales (4 bytes each),
// then the levels (one signed byte each).
//
// The max's loop also finds a non-finite v (encode_guard.h): the bucket
// holding one is not written, and the call stops there. On x86-64 CPUs
// with AVX2 sixteen elements share a vector of eight dither hashes, with
// AVX-512 thirty-two a vector of sixteen (the widest the CPU runs is chosen
// at run time); elsewhere the scalar loop runs. All round in the same
// order without fused multiply-adds, so payloads and residuals are
// bit-identical. Thread-safe.
#ifndef LEEWAY_KERNELS_INT8_BLOCK_H_
#define LEEWAY_KERNELS_INT8_BLOCK_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace codec_internal {

// Buckets [begin, end) of n elements, begin a multiple of `bucket`;
// `dither_seed` is DitherSeed(codec seed). Returns how many elements from
// begin were written: end - begin when all are finite.
size_t EncodeInt8Buckets(uint32_t bucket, uint32_t dither_seed, size_t n,
                         size_t begin, size_t end, const float* g, float* r,
                         uint8_t* body);

// The loops by name, for tests that compare them.
enum class Int8Path { kScalar, kAvx2, kAvx512 };

// Whether this CPU and build can take `path`.
bool CanTakeInt8Path(Int8Path path);

// EncodeInt8Buckets on `path`, which CanTakeInt8Path must allow.
size_t EncodeInt8BucketsOn(Int8Path path, uint32_t bucket, uint32_t dither_seed,
                           size_t n, size_t begin, size_t end, const float* g,
                           float* r, uint8_t* body);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_INT8_BLOCK_H_
