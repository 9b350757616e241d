#include "kernels/half_block.h"

#include <algorithm>

#include "kernels/cpu_features.h"
#include "kernels/half.h"

namespace leeway {
namespace codec_internal {
namespace {

inline void Store16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

inline uint16_t Load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (uint32_t{p[1]} << 8));
}

#ifdef LEEWAY_HAVE_AVX2_PATH
// x86-64 is little-endian: a vector of fp16 stored as is is the wire format.
__attribute__((target("avx2,f16c"))) void EncodeF16c(size_t begin, size_t end,
                                                     const float* g, float* r,
                                                     uint8_t* body) {
  const __m256 hi = _mm256_set1_ps(65504.0f);
  const __m256 lo = _mm256_set1_ps(-65504.0f);
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 v = _mm256_loadu_ps(g + i);
    if (r != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(r + i));
    const __m128i h = _mm256_cvtps_ph(_mm256_min_ps(_mm256_max_ps(v, lo), hi),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(body + 2 * i), h);
    if (r != nullptr) _mm256_storeu_ps(r + i, _mm256_sub_ps(v, _mm256_cvtph_ps(h)));
  }
  EncodeFp16Scalar(i, end, g, r, body);
}

__attribute__((target("avx2,f16c"))) void DecodeF16c(const uint8_t* body, size_t begin,
                                                     size_t end, float* dst) {
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(body + 2 * i));
    _mm256_storeu_ps(dst + (i - begin), _mm256_cvtph_ps(h));
  }
  for (; i < end; ++i) dst[i - begin] = Fp16ToFloat(Load16(body + 2 * i));
}

#endif

}  // namespace

void EncodeFp16Scalar(size_t begin, size_t end, const float* g, float* r, uint8_t* body) {
  for (size_t i = begin; i < end; ++i) {
    const float v = r != nullptr ? g[i] + r[i] : g[i];
    const uint16_t h = FloatToFp16(v);
    Store16(body + 2 * i, h);
    if (r != nullptr) r[i] = v - Fp16ToFloat(h);
  }
}

void DecodeFp16Scalar(const uint8_t* body, size_t begin, size_t end, float* dst) {
  for (size_t i = begin; i < end; ++i) dst[i - begin] = Fp16ToFloat(Load16(body + 2 * i));
}

void EncodeFp16(size_t begin, size_t end, const float* g, float* r, uint8_t* body) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasF16c()) return EncodeF16c(begin, end, g, r, body);
#endif
  EncodeFp16Scalar(begin, end, g, r, body);
}

void DecodeFp16(const uint8_t* body, size_t begin, size_t end, float* dst) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasF16c()) return DecodeF16c(body, begin, end, dst);
#endif
  DecodeFp16Scalar(body, begin, end, dst);
}

}  // namespace codec_internal
}  // namespace leeway
