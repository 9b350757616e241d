// LEEWAY_VECTOR_CLONES marks a hot loop function to be compiled twice, for
// the x86-64 baseline and for x86-64-v3 (AVX2, FMA, F16C), the loader
// picking the clone the CPU supports. Builds stay portable; machines that
// have AVX2 get its vector width. Only GCC on x86-64 (clang's
// target_clones does not take these names); elsewhere it is empty, and
// under sanitizers (their runtimes are not up yet when the loader runs
// ifunc resolvers).
#ifndef LEEWAY_KERNELS_VECTOR_CLONES_H_
#define LEEWAY_KERNELS_VECTOR_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define LEEWAY_VECTOR_CLONES \
  __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define LEEWAY_VECTOR_CLONES
#endif

#endif  // LEEWAY_KERNELS_VECTOR_CLONES_H_
