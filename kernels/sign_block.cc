#include "kernels/sign_block.h"

#include <algorithm>
#include <cmath>

#include "core/common/little_endian.h"
#include "kernels/cpu_features.h"
#include "kernels/encode_guard.h"
#include "kernels/half.h"

namespace leeway {
namespace codec_internal {
namespace {

constexpr size_t kLanes = 16;
// Elements of the next bucket asked for ahead (AVX2 path).
constexpr size_t kPrefetchElements = 4096;

inline float Value(const float* g, const float* r, size_t i) {
  return r != nullptr ? g[i] + r[i] : g[i];
}

// Adds |v| of [from, end) into the lanes (lane (i - start) % 16), then the
// lanes in order: the bucket's scale, or a negative number when some v of
// the bucket is not finite (`worst`: the largest magnitude bits so far).
// Both paths finish their sums here.
float FinishScale(const float* g, const float* r, size_t start, size_t from,
                  size_t end, float* lanes, uint32_t worst) {
  for (size_t i = from; i < end; ++i) {
    const float v = Value(g, r, i);
    worst = std::max(worst, MagnitudeKey(v));
    lanes[(i - start) % kLanes] += std::fabs(v);
  }
  if (worst >= kNonFiniteKey) return -1.0f;
  float total = 0.0f;
  for (size_t l = 0; l < kLanes; ++l) total += lanes[l];
  return total / static_cast<float>(end - start);
}

// Bits and residuals of [from, end), from a multiple of 8.
void SignTail(float scale, size_t from, size_t end, const float* g, float* r,
              uint8_t* bits) {
  for (size_t byte_start = from; byte_start < end; byte_start += 8) {
    uint32_t byte = 0;
    for (size_t i = byte_start; i < std::min(end, byte_start + 8); ++i) {
      const float v = Value(g, r, i);
      const uint32_t negative = FloatBits(v) >> 31;
      byte |= negative << (i - byte_start);
      if (r != nullptr) r[i] = v - (negative != 0 ? -scale : scale);
    }
    bits[byte_start / 8] = static_cast<uint8_t>(byte);
  }
}

#ifdef LEEWAY_HAVE_AVX2_PATH
__attribute__((target("avx2"))) size_t EncodeSignAvx2(
    uint32_t bucket, size_t n, size_t begin, size_t end, const float* g,
    float* r, uint8_t* body) {
  uint8_t* bits = body + 4 * ((n + bucket - 1) / bucket);
  const __m256 magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN));
  for (size_t start = begin; start < end; start += bucket) {
    const size_t stop = std::min(end, start + bucket);
    __m256 low = _mm256_setzero_ps(), high = _mm256_setzero_ps();
    __m256i worst = _mm256_setzero_si256();
    size_t i = start;
    for (; i + kLanes <= stop; i += kLanes) {
      const __m256 a = _mm256_and_ps(LoadV(g, r, i), magnitude);
      const __m256 b = _mm256_and_ps(LoadV(g, r, i + 8), magnitude);
      low = _mm256_add_ps(low, a);
      high = _mm256_add_ps(high, b);
      worst = _mm256_max_epu32(worst, _mm256_max_epu32(_mm256_castps_si256(a),
                                                       _mm256_castps_si256(b)));
    }
    alignas(32) float lanes[kLanes];
    alignas(32) uint32_t worst_lanes[8];
    _mm256_store_ps(lanes, low);
    _mm256_store_ps(lanes + 8, high);
    _mm256_store_si256(reinterpret_cast<__m256i*>(worst_lanes), worst);
    const float scale = FinishScale(g, r, start, i, stop, lanes,
                                    *std::max_element(worst_lanes, worst_lanes + 8));
    if (scale < 0.0f) return start - begin;
    StoreLE32(body + 4 * (start / bucket), FloatBits(scale));
    const __m256 scales = _mm256_set1_ps(scale);
    // The next bucket's lines (its first kPrefetchElements) start coming
    // while this one is written.
    for (size_t p = stop; p < std::min(end, stop + std::min<size_t>(bucket, kPrefetchElements));
         p += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(g + p), _MM_HINT_T0);
      if (r != nullptr) _mm_prefetch(reinterpret_cast<const char*>(r + p), _MM_HINT_T0);
    }
    for (i = start; i + 8 <= stop; i += 8) {
      const __m256 v = LoadV(g, r, i);
      bits[i / 8] = static_cast<uint8_t>(_mm256_movemask_ps(v));
      if (r != nullptr) {
        // v - (+-scale), the sign of the subtrahend taken from v.
        const __m256 sent = _mm256_xor_ps(scales, _mm256_and_ps(v, sign));
        _mm256_storeu_ps(r + i, _mm256_sub_ps(v, sent));
      }
    }
    SignTail(scale, i, stop, g, r, bits);
  }
  return end - begin;
}

__attribute__((target("avx2"))) void DecodeSignValuesAvx2(const uint8_t* bits,
                                                          uint32_t scale_bits, size_t from,
                                                          size_t to, float* dst) {
  size_t i = from;
  const size_t first = std::min(to, (from + 7) / 8 * 8);
  DecodeSignValuesScalar(bits, scale_bits, i, first, dst);
  i = first;
  // Lane j tests bit j of the byte; a set bit becomes the sign bit.
  const __m256i lane_bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i sign = _mm256_set1_epi32(INT32_MIN);
  const __m256i scale = _mm256_set1_epi32(static_cast<int>(scale_bits));
  for (; i + 8 <= to; i += 8) {
    const __m256i byte = _mm256_set1_epi32(bits[i / 8]);
    const __m256i set =
        _mm256_cmpeq_epi32(_mm256_and_si256(byte, lane_bits), lane_bits);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + (i - from)),
                        _mm256_xor_si256(scale, _mm256_and_si256(set, sign)));
  }
  DecodeSignValuesScalar(bits, scale_bits, i, to, dst + (i - from));
}

#endif  // LEEWAY_HAVE_AVX2_PATH

}  // namespace

void DecodeSignValuesScalar(const uint8_t* bits, uint32_t scale_bits, size_t from,
                            size_t to, float* dst) {
  for (size_t i = from; i < to; ++i) {
    const uint32_t bit = (bits[i / 8] >> (i % 8)) & 1u;
    dst[i - from] = BitsFloat(scale_bits ^ (bit << 31));
  }
}

void DecodeSignValues(const uint8_t* bits, uint32_t scale_bits, size_t from, size_t to,
                      float* dst) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasAvx2()) return DecodeSignValuesAvx2(bits, scale_bits, from, to, dst);
#endif
  DecodeSignValuesScalar(bits, scale_bits, from, to, dst);
}

size_t EncodeSignBucketsScalar(uint32_t bucket, size_t n, size_t begin,
                               size_t end, const float* g, float* r,
                               uint8_t* body) {
  uint8_t* bits = body + 4 * ((n + bucket - 1) / bucket);
  for (size_t start = begin; start < end; start += bucket) {
    const size_t stop = std::min(end, start + bucket);
    float lanes[kLanes] = {};
    const float scale = FinishScale(g, r, start, start, stop, lanes, 0);
    if (scale < 0.0f) return start - begin;
    StoreLE32(body + 4 * (start / bucket), FloatBits(scale));
    SignTail(scale, start, stop, g, r, bits);
  }
  return end - begin;
}

size_t EncodeSignBuckets(uint32_t bucket, size_t n, size_t begin, size_t end,
                         const float* g, float* r, uint8_t* body) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasAvx2()) return EncodeSignAvx2(bucket, n, begin, end, g, r, body);
#endif
  return EncodeSignBucketsScalar(bucket, n, begin, end, g, r, body);
}

}  // namespace codec_internal
}  // namespace leeway
