#include "kernels/cpu_features.h"

#ifdef LEEWAY_HAVE_AVX2_PATH
#include <cpuid.h>
#endif

namespace leeway {
namespace codec_internal {
namespace {

#ifdef LEEWAY_HAVE_AVX2_PATH
bool DetectAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

// clang's __builtin_cpu_supports does not know F16C: CPUID it is.
bool DetectF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return DetectAvx2() && (ecx & (1u << 29)) != 0;
}

// __builtin_cpu_supports also checks that the OS saves the ZMM state.
bool DetectAvx512() {
  __builtin_cpu_init();
  return DetectAvx2() && __builtin_cpu_supports("avx512f");
}
#endif

}  // namespace

bool CpuHasAvx2() {
#ifdef LEEWAY_HAVE_AVX2_PATH
  static const bool has = DetectAvx2();
  return has;
#else
  return false;
#endif
}

bool CpuHasF16c() {
#ifdef LEEWAY_HAVE_AVX2_PATH
  static const bool has = DetectF16c();
  return has;
#else
  return false;
#endif
}

bool CpuHasAvx512() {
#ifdef LEEWAY_HAVE_AVX2_PATH
  static const bool has = DetectAvx512();
  return has;
#else
  return false;
#endif
}

}  // namespace codec_internal
}  // namespace leeway
