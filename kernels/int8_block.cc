#include "kernels/int8_block.h"

// GCC 12's AVX-512 intrinsics start from an uninitialized "undefined"
// vector (_mm512_undefined_*) and warn about it in every caller.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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

// Elements of the next bucket asked for ahead.
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
#define LEEWAY_AVX512 __attribute__((target("avx2,avx512f")))

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

// The largest magnitude key of [start, stop), eight elements a step.
__attribute__((target("avx2"))) uint32_t MaxKeyAvx2(const float* g, const float* r,
                                                    size_t start, size_t stop) {
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  __m256i worst = _mm256_setzero_si256();
  size_t i = start;
  for (; i + 8 <= stop; i += 8) {
    worst = _mm256_max_epu32(
        worst, _mm256_and_si256(_mm256_castps_si256(LoadV(g, r, i)), magnitude));
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), worst);
  return std::max(*std::max_element(lanes, lanes + 8), MaxMagnitudeKey(g, r, i, stop));
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

// Levels of [from, to): scalar to a group boundary, groups, scalar after.
__attribute__((target("avx2"))) void QuantizeAvx2(float scale, uint32_t seed, size_t from,
                                                  size_t to, const float* g, float* r,
                                                  int8_t* q) {
  const size_t first = std::min(to, (from + 15) / 16 * 16);
  const size_t last = std::max(first, to / 16 * 16);
  QuantizeRange(scale, seed, from, first, g, r, q);
  QuantizeGroups(scale, seed, first, last, g, r, q);
  QuantizeRange(scale, seed, last, to, g, r, q);
}

// Sixteen elements of v = g + r from i (v = g without r).
LEEWAY_AVX512 inline __m512 LoadV16(const float* g, const float* r, size_t i) {
  const __m512 x = _mm512_loadu_ps(g + i);
  return r != nullptr ? _mm512_add_ps(x, _mm512_loadu_ps(r + i)) : x;
}

// Levels of v (sixteen elements) as 32-bit integers; r updated.
LEEWAY_AVX512 inline __m512i Levels16(__m512 v, __m512 dither, __m512 inverse, __m512 scale,
                                      float* r) {
  const __m512 shifted = _mm512_add_ps(
      _mm512_add_ps(_mm512_mul_ps(v, inverse), dither), _mm512_set1_ps(128.0f));
  __m512i level = _mm512_sub_epi32(_mm512_cvttps_epi32(shifted), _mm512_set1_epi32(128));
  level = _mm512_min_epi32(_mm512_max_epi32(level, _mm512_set1_epi32(-127)),
                           _mm512_set1_epi32(127));
  if (r != nullptr) {
    _mm512_storeu_ps(r, _mm512_sub_ps(v, _mm512_mul_ps(_mm512_cvtepi32_ps(level), scale)));
  }
  return level;
}

// The largest magnitude key of [start, stop), sixteen elements a step.
LEEWAY_AVX512 uint32_t MaxKeyAvx512(const float* g, const float* r, size_t start,
                                    size_t stop) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF);
  __m512i worst = _mm512_setzero_si512();
  size_t i = start;
  for (; i + 16 <= stop; i += 16) {
    worst = _mm512_max_epu32(
        worst, _mm512_and_si512(_mm512_castps_si512(LoadV16(g, r, i)), magnitude));
  }
  return std::max(_mm512_reduce_max_epu32(worst), MaxMagnitudeKey(g, r, i, stop));
}

// [from, to) with from a multiple of 16: 32 elements on sixteen hashes a
// step (pair indices i/2 .. i/2 + 15: lanes 0-7 dither elements i .. i + 15,
// lanes 8-15 elements i + 16 .. i + 31), then the AVX2 loop for the rest.
LEEWAY_AVX512 void QuantizeAvx512(float scale_value, uint32_t seed, size_t from, size_t to,
                                  const float* g, float* r, int8_t* q) {
  const size_t first = std::min(to, (from + 15) / 16 * 16);
  QuantizeRange(scale_value, seed, from, first, g, r, q);
  const __m512 scale = _mm512_set1_ps(scale_value);
  const __m512 inverse = _mm512_set1_ps(scale_value > 0.0f ? 1.0f / scale_value : 0.0f);
  const __m512i lanes =
      _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
  const __m512 half = _mm512_set1_ps(0.5f);
  const __m512 unit = _mm512_set1_ps(1.0f / 65536.0f);
  size_t i = first;
  for (; i + 32 <= to; i += 32) {
    __m512i z = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(i / 2)), lanes);
    z = _mm512_add_epi32(_mm512_mullo_epi32(z, _mm512_set1_epi32(0x9E3779B1u)),
                         _mm512_set1_epi32(static_cast<int>(seed)));
    z = _mm512_xor_si512(z, _mm512_srli_epi32(z, 16));
    z = _mm512_mullo_epi32(z, _mm512_set1_epi32(0x85EBCA6Bu));
    z = _mm512_xor_si512(z, _mm512_srli_epi32(z, 13));
    z = _mm512_mullo_epi32(z, _mm512_set1_epi32(0xC2B2AE35u));
    z = _mm512_xor_si512(z, _mm512_srli_epi32(z, 16));
    const __m512 u_low = _mm512_mul_ps(
        _mm512_add_ps(_mm512_cvtepi32_ps(_mm512_and_si512(z, low16)), half), unit);
    const __m512 u_high = _mm512_mul_ps(
        _mm512_add_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(z, 16)), half), unit);
    // Elements i .. i + 15: low halves of lanes 0-7, then their high halves;
    // i + 16 .. i + 31 likewise from lanes 8-15.
    const __m512 u_a = _mm512_shuffle_f32x4(u_low, u_high, 0x44);
    const __m512 u_b = _mm512_shuffle_f32x4(u_low, u_high, 0xEE);
    const __m512i a = Levels16(LoadV16(g, r, i), u_a, inverse, scale,
                               r != nullptr ? r + i : nullptr);
    const __m512i b = Levels16(LoadV16(g, r, i + 16), u_b, inverse, scale,
                               r != nullptr ? r + i + 16 : nullptr);
    // Levels lie in [-127, 127]: the saturating narrowing only packs them.
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i), _mm512_cvtsepi32_epi8(a));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + i + 16), _mm512_cvtsepi32_epi8(b));
  }
  QuantizeAvx2(scale_value, seed, i, to, g, r, q);
}

#endif  // LEEWAY_HAVE_AVX2_PATH

void QuantizeScalar(float scale, uint32_t seed, size_t from, size_t to, const float* g,
                    float* r, int8_t* q) {
  QuantizeRange(scale, seed, from, to, g, r, q);
}

// The bucket loop every path shares: the bucket's largest magnitude key
// (max_key), its scale, then its levels (quantize), the next bucket's first
// lines asked for while this one is written.
template <typename MaxKey, typename Quantize>
size_t EncodeBuckets(uint32_t bucket, uint32_t seed, size_t n, size_t begin, size_t end,
                     const float* g, float* r, uint8_t* body, MaxKey max_key,
                     Quantize quantize) {
  auto* q = reinterpret_cast<int8_t*>(body + 4 * ((n + bucket - 1) / bucket));
  size_t index = begin / bucket;
  for (size_t start = begin; start < end; start += bucket, ++index) {
    const size_t stop = std::min(end, start + bucket);
    const uint32_t max_bits = max_key(g, r, start, stop);
    if (max_bits >= kNonFiniteKey) return start - begin;  // Inf or NaN
    const float scale = StoreScale(max_bits, index, body);
    for (size_t p = stop; p < std::min(end, stop + std::min<size_t>(bucket, kPrefetchElements));
         p += 16) {
      __builtin_prefetch(g + p);
      if (r != nullptr) __builtin_prefetch(r + p);
    }
    quantize(scale, seed, start, stop, g, r, q);
  }
  return end - begin;
}

}  // namespace

bool CanTakeInt8Path(Int8Path path) {
  switch (path) {
    case Int8Path::kScalar: return true;
    case Int8Path::kAvx2: return CpuHasAvx2();
    case Int8Path::kAvx512: return CpuHasAvx512();
  }
  return false;
}

size_t EncodeInt8BucketsOn(Int8Path path, uint32_t bucket, uint32_t dither_seed, size_t n,
                           size_t begin, size_t end, const float* g, float* r,
                           uint8_t* body) {
  switch (path) {
#ifdef LEEWAY_HAVE_AVX2_PATH
    case Int8Path::kAvx512:
      return EncodeBuckets(bucket, dither_seed, n, begin, end, g, r, body, MaxKeyAvx512,
                           QuantizeAvx512);
    case Int8Path::kAvx2:
      return EncodeBuckets(bucket, dither_seed, n, begin, end, g, r, body, MaxKeyAvx2,
                           QuantizeAvx2);
#endif
    default:
      return EncodeBuckets(bucket, dither_seed, n, begin, end, g, r, body, MaxMagnitudeKey,
                           QuantizeScalar);
  }
}

size_t EncodeInt8Buckets(uint32_t bucket, uint32_t dither_seed, size_t n,
                         size_t begin, size_t end, const float* g, float* r,
                         uint8_t* body) {
  const Int8Path path = CpuHasAvx512() ? Int8Path::kAvx512
                        : CpuHasAvx2() ? Int8Path::kAvx2
                                       : Int8Path::kScalar;
  return EncodeInt8BucketsOn(path, bucket, dither_seed, n, begin, end, g, r, body);
}

}  // namespace codec_internal
}  // namespace leeway
