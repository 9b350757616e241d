#include "kernels/gather_block.h"

#include "kernels/cpu_features.h"
#include "kernels/half.h"

namespace leeway {
namespace codec_internal {
namespace {

#ifdef LEEWAY_HAVE_AVX2_PATH
// Keys are below 2^31, so a signed compare against key - 1 is >= key.
// key 0 (everything passes) takes the scalar loop.
__attribute__((target("avx2"))) void GatherAvx2(const float* g, float* r, size_t begin,
                                                size_t end, uint32_t key,
                                                std::vector<uint32_t>* indices,
                                                std::vector<uint32_t>* keys) {
  const __m256i magnitude = _mm256_set1_epi32(0x7FFFFFFF);
  const __m256i below = _mm256_set1_epi32(static_cast<int>(key - 1));
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 v = _mm256_loadu_ps(g + i);
    if (r != nullptr) {
      v = _mm256_add_ps(v, _mm256_loadu_ps(r + i));
      _mm256_storeu_ps(r + i, v);
    }
    const __m256i m = _mm256_and_si256(_mm256_castps_si256(v), magnitude);
    int hits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(m, below)));
    if (hits == 0) continue;
    alignas(32) uint32_t lanes[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), m);
    while (hits != 0) {
      const int lane = __builtin_ctz(static_cast<unsigned>(hits));
      indices->push_back(static_cast<uint32_t>(i + lane));
      keys->push_back(lanes[lane]);
      hits &= hits - 1;
    }
  }
  GatherBlockScalar(g, r, i, end, key, indices, keys);
}

// Keys above threshold: unsigned order, compared signed after flipping
// the top bit.
__attribute__((target("avx2"))) size_t KeysAboveAvx2(const uint32_t* keys, size_t begin,
                                                     size_t end, uint32_t threshold,
                                                     std::vector<uint32_t>* indices) {
  const __m256i flip = _mm256_set1_epi32(INT32_MIN);
  const __m256i limit = _mm256_set1_epi32(static_cast<int>(threshold ^ 0x80000000u));
  size_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256i k =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(keys + i)), flip);
    int hits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(k, limit)));
    while (hits != 0) {
      indices->push_back(static_cast<uint32_t>(i + __builtin_ctz(static_cast<unsigned>(hits))));
      hits &= hits - 1;
    }
  }
  return i;
}

#endif  // LEEWAY_HAVE_AVX2_PATH

}  // namespace

void GatherKeysAbove(const uint32_t* keys, size_t begin, size_t end, uint32_t threshold,
                     std::vector<uint32_t>* indices) {
  size_t i = begin;
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (CpuHasAvx2()) i = KeysAboveAvx2(keys, begin, end, threshold, indices);
#endif
  for (; i < end; ++i) {
    if (keys[i] > threshold) indices->push_back(static_cast<uint32_t>(i));
  }
}

void GatherBlockScalar(const float* g, float* r, size_t begin, size_t end,
                       uint32_t key, std::vector<uint32_t>* indices,
                       std::vector<uint32_t>* keys) {
  for (size_t i = begin; i < end; ++i) {
    const float v = r != nullptr ? g[i] + r[i] : g[i];
    if (r != nullptr) r[i] = v;
    const uint32_t k = MagnitudeKey(v);
    if (k >= key) {
      indices->push_back(static_cast<uint32_t>(i));
      keys->push_back(k);
    }
  }
}

void GatherBlock(const float* g, float* r, size_t begin, size_t end, uint32_t key,
                 std::vector<uint32_t>* indices, std::vector<uint32_t>* keys) {
#ifdef LEEWAY_HAVE_AVX2_PATH
  if (key > 0 && CpuHasAvx2()) return GatherAvx2(g, r, begin, end, key, indices, keys);
#endif
  GatherBlockScalar(g, r, begin, end, key, indices, keys);
}

}  // namespace codec_internal
}  // namespace leeway
