// What the CPU offers the block kernels' vector paths, asked once (CPUID)
// and cached, and the load they share. The block kernels (half_block,
// int8_block, sign_block, gather_block) compile an AVX2 path with a target
// attribute where the compiler can (x86-64 GCC or clang), define
// LEEWAY_HAVE_AVX2_PATH, and take it at run time when CpuHasAvx2() says so
// (int8_block also has an AVX-512 path, taken when CpuHasAvx512() says so);
// their scalar paths give the same results. Thread-safe.
#ifndef LEEWAY_KERNELS_CPU_FEATURES_H_
#define LEEWAY_KERNELS_CPU_FEATURES_H_

#include <cstddef>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define LEEWAY_HAVE_AVX2_PATH 1
#endif

namespace leeway {
namespace codec_internal {

// AVX2, which also says the OS saves the vector registers. False where no
// AVX2 path is compiled.
bool CpuHasAvx2();

// AVX2 and F16C (CPUID leaf 1, ECX bit 29).
bool CpuHasF16c();

// AVX2 and AVX-512 F with the OS saving the 512-bit registers. False where
// no AVX2 path is compiled.
bool CpuHasAvx512();

#ifdef LEEWAY_HAVE_AVX2_PATH
// Eight elements of v = g + r from i (v = g without r).
__attribute__((target("avx2"))) inline __m256 LoadV(const float* g, const float* r,
                                                    size_t i) {
  const __m256 x = _mm256_loadu_ps(g + i);
  return r != nullptr ? _mm256_add_ps(x, _mm256_loadu_ps(r + i)) : x;
}
#endif

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CPU_FEATURES_H_
