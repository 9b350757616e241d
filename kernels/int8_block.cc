#include "kernels/int8_block.h"

#include <algorithm>

#include "core/common/little_endian.h"
#include "kernels/counter_random.h"
#include "kernels/cpu_features.h"
#include "kernels/encode_guard.h"
#include "kernels/half.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace codec_internal {
namespace {

// Elements of the next bucket asked for ahead (AVX2 path).
constexpr size_t kPrefetchElements = 4096;

// The bucket's scale from its largest magnitude bits; writes it.
inline float StoreScale(uint32_t max_bits, size_t bucket_index, uint8_t* body) {
  const float scale = BitsFloat(max_bits) / 127.0f;
  StoreLE32(body + 4 * bucket_index, FloatBits(scale));
  return scale;
}

// Levels of [from, to), one element at a time.
LEEWAY_VECTOR_CLONES
void QuantizeRange(float scale, uint32_t seed, size_t from, size_t to,
                   const float* __restrict g, float* __restrict r,
                   int8_t* __restrict q) {
  const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  for (size_t i = from; i < to; ++i) {
    const float v = r != nullptr ? g[i] + r[i] : g[i];
    // Stochastic rounding: floor(v/scale + u) is unbiased. The +128 keeps
    // the argument positive, where truncation is floor (no libm call).
    const float shifted =
        v * inverse + DitherUniform(seed, static_cast<uint32_t>(i)) + 128.0f;
    float level = static_cast<float>(static_cast<int>(shifted) - 128);
    level = std::min(127.0f, std::max(-127.0f, level));
    q[i] = static_cast<int8_t>(level);
    if (r != nullptr) r[i] = v - level * scale;
  }
}

#ifdef LEEWAY_HAVE_AVX2_PATH
// Levels of v (eight elements) as 32-bit integers; r updated.
__attribute__((target("avx2"))) inline __m256i Levels(__m256 v, __m256 dither,
                                                      __m256 inverse, __m256 scale,
                                                      float* r) {
  const __m256 shifted = _mm256_add_ps(
      _mm256_add_ps(_mm256_mul_ps(v, inverse), dither), _mm256_set1_ps(128.0f));
  __m256i level = _mm256_sub_epi32(_mm256_cvttps_epi32(shifted), _mm256_set1_epi32(128));
  level = _mm256_min_epi32(_mm256_max_epi32(level, _mm256_set1_epi32(-127)),
                           _mm256_set1_epi32(127));
  if (r != nullptr) {
    _mm256_storeu_ps(r, _mm256_sub_ps(v, _mm256_mul_ps(_mm256_cvtepi32_ps(level), scale)));
  }
  return level;
}

// [from, to) with from and to multiples of 16: eight hashes a group.
__attribute__((target("avx2"))) void QuantizeGroups(float scale_value, uint32_t seed,
                                                    size_t from, size_t to,
                                                    const float* g, float* r,
                                                    int8_t* q) {
  const __m256 scale = _mm256_set1_ps(scale_value);
  const __m256 inverse = _mm256_set1_ps(scale_value > 0.0f ? 1.0f / scale_value : 0.0f);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i low16 = _mm256_set1_epi32(0xFFFF);
  const __m256 half = _mm256_set1_ps(0.5f);
  const __m256 unit = _mm256_set1_ps(1.0f / 65536.0f);
  for (size_t i = from; i < to; i += 16) {
    // DitherHash of pair indices i/2 .. i/2 + 7 (counter_random.h).
    __m256i z = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(i / 2)), lanes);
    z = _mm256_add_epi32(_mm256_mullo_epi32(z, _mm256_set1_epi32(0x9E3779B1u)),
                         _mm256_set1_epi32(static_cast<int>(seed)));
    z = _mm256_xor_si256(z, _mm256_srli_epi32(z, 16));
    z = _mm256_mullo_epi32(z, _mm256_set1_epi32(0x85EBCA6Bu));
    z = _mm256_xor_si256(z, _mm256_srli_epi32(z, 13));
    z = _mm256_mullo_epi32(z, _mm256_set1_epi32(0xC2B2AE35u));
    z = _mm256_xor_si256(z, _mm256_srli_epi32(z, 16));
    const __m256 u_low = _mm256_mul_ps(
        _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_and_si256(z, low16)), half), unit);
    const __m256 u_high = _mm256_mul_ps(
        _mm256_add_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(z, 16)), half), unit);
    const __m256i a = Levels(LoadV(g, r, i), u_low, inverse, scale,
                             r != nullptr ? r + i : nullptr);
    const __m256i b = Levels(LoadV(g, r, i + 8), u_high, inverse, scale,
                             r != nullptr ? r + i + 8 : nullptr);
    // 16 levels to bytes in element order.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
    const __m128i bytes = _mm_packs_epi16(_mm256_castsi256_si128(words),
                                          _mm256_extracti128_si256(words, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), bytes);
  }
}

__attribute__((target("avx2"))) size_t EncodeInt8Avx2(uint32_t bucket, uint32_t seed,
                                                      size_t n, size_t begin, size_t end,
                                                      const float* g, float* r,
                                                      uint8_t* body) {
  auto* q = reinterpret_cast<int8_t*>(body + 4 * ((n + bucket - 1) / bucket));
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  for (size_t start = begin; start < end; start += bucket) {
    const size_t stop = std::min(end, start + bucket);
    __m256i worst = _mm256_setzero_si256();
    size_t i = start;
    for (; i + 8 <= stop; i += 8) {
      worst = _mm256_max_epu32(
          worst, _mm256_and_si256(_mm256_castps_si256(LoadV(g, r, i)), magnitude));
    }
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), worst);
    const uint32_t max_bits =
        std::max(*std::max_element(lanes, lanes + 8), MaxMagnitudeKey(g, r, i, stop));
    if (max_bits >= kNonFiniteKey) return start - begin;  // Inf or NaN
    const float scale = StoreScale(max_bits, start / bucket, body);
    // The next bucket's lines (its first kPrefetchElements) start coming
    // while this one is written.
    for (size_t p = stop; p < std::min(end, stop + std::min<size_t>(bucket, kPrefetchElements));
         p += 16) {
      _mm_prefetch(reinterpret_cast<const char*>(g + p), _MM_HINT_T0);
      if (r != nullptr) _mm_prefetch(reinterpret_cast<const char*>(r + p), _MM_HINT_T0);
    }
    // Scalar up to a group boundary, groups, scalar after the last one.
    const size_t first = std::min(stop, (start + 15) / 16 * 16);
    const size_t last = std::max(first, stop / 16 * 16);
    QuantizeRange(scale, seed, start, first, g, r, q);
    QuantizeGroups(scale, seed, first, last, g, r, q);
    QuantizeRange(scale, seed, last, stop, g, r, q);
  }
  return end - begin;
}

#endif  // LEEWAY_HAVE_AVX2_PATH

}  // namespace

size_t EncodeInt8BucketsScalar(uint32_t bucket, uint32_t dither_seed, size_t n,
                               size_t begin, size_t end, const float* g,
                               float* r, uint8_t* body) {
  auto* q = reinterpret_cast<int8_t*>(body + 4 * ((n + bucket - 1) / bucket));
  for (size_t start = begin; start < end; start += bucket) {
    const size_t stop = std::min(end, start + bucket);
    const uint32_t max_bits = MaxMagnitudeKey(g, r, start, stop);
    if (max_bits >= kNonFiniteKey) return start - begin;  // Inf or NaN
    const float scale = StoreScale(max_bits, start / bucket, body);
    QuantizeRange(scale, dither_seed, start, stop, g, r, q);
  }
  return end - begin;
}

size_t EncodeInt8Buckets(uint32_t bucket, uint32_t dither_seed, size_t n,
                         size_t begin, size_t end, const float* g, float* r,
                         uint8_t* body) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasAvx2()) {
    return EncodeInt8Avx2(bucket, dither_seed, n, begin, end, g, r, body);
  }
#endif
  return EncodeInt8BucketsScalar(bucket, dither_seed, n, begin, end, g, r, body);
}

}  // namespace codec_internal
}  // namespace leeway
