// The sign codec's buckets, for the CPU codecs. For each bucket of
// v = g + r (v = g without a residual): scale = mean |v|, stored first, and
// one bit per element, set where v's sign bit is (so -0 counts as
// negative); with r, error feedback leaves r = v - (bit ? -scale : scale).
// Body: the buckets' scales (4 bytes each), then the bits (LSB first).
//
// The sum of |v| runs in 16 lanes (element i of a bucket into lane i % 16,
// each lane in index order) added in lane order, on every path, so the
// AVX2 path (chosen at run time) and the scalar one give bit-identical
// payloads. The sum's loop also finds a non-finite v (encode_guard.h): the
// bucket holding one is not written, and the call stops there. Thread-safe.
#ifndef LEEWAY_KERNELS_SIGN_BLOCK_H_
#define LEEWAY_KERNELS_SIGN_BLOCK_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace codec_internal {

// Buckets [begin, end) of n elements (begin a multiple of `bucket`, which
// is a multiple of 8, so that buckets own whole bytes of bits). Returns how
// many elements from begin were written: end - begin when all are finite.
size_t EncodeSignBuckets(uint32_t bucket, size_t n, size_t begin, size_t end,
                         const float* g, float* r, uint8_t* body);

// The scalar version, for tests that compare the two paths.
size_t EncodeSignBucketsScalar(uint32_t bucket, size_t n, size_t begin,
                               size_t end, const float* g, float* r,
                               uint8_t* body);

// Decoding: the values of elements [from, to) of one bucket into
// dst[0, to - from): the scale (its bits, `scale_bits`) with the sign bit
// flipped where the element's bit in `bits` (the body's bit array) is set,
// so a set bit gives -scale bit for bit. Any from and to; on AVX2 CPUs
// eight elements from one byte at a time.
void DecodeSignValues(const uint8_t* bits, uint32_t scale_bits, size_t from,
                      size_t to, float* dst);

// The scalar version, for tests that compare the two paths.
void DecodeSignValuesScalar(const uint8_t* bits, uint32_t scale_bits,
                            size_t from, size_t to, float* dst);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_SIGN_BLOCK_H_
