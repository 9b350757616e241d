// Counter-based random draws shared by the CPU and CUDA kernels: the same
// (seed, index) always gives the same number in [0, 1), so encoders are
// deterministic, blocks can run in any order or in parallel, and a decoder
// regenerates what the encoder drew. Also randomk's stratified selection,
// which the decoder recomputes from the seed (no indices on the wire).
// SplitMix64 finalizer. Pure, thread-safe.
#ifndef LEEWAY_KERNELS_COUNTER_RANDOM_H_
#define LEEWAY_KERNELS_COUNTER_RANDOM_H_

#include <cstdint>

#include "kernels/host_device.h"

namespace leeway {

// Independent streams drawn from one user seed.
enum class RandomStream : uint64_t {
  kRounding = 0,   // int8 stochastic rounding
  kSampling = 1,   // top-k threshold sampling
  kSelection = 2,  // randomk's indices
};

LEEWAY_HOST_DEVICE inline uint64_t StreamSeed(uint64_t seed,
                                              RandomStream stream) {
  return seed ^ (static_cast<uint64_t>(stream) * 0xD1B54A32D192ED03ull);
}

LEEWAY_HOST_DEVICE inline float CounterUniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// A cheap 32-bit counter hash for int8's dither (it vectorizes, unlike the
// 64-bit CounterUniform): murmur3's finalizer.
LEEWAY_HOST_DEVICE inline uint32_t DitherHash(uint32_t seed, uint32_t index) {
  uint32_t z = index * 0x9E3779B1u + seed;
  z ^= z >> 16;
  z *= 0x85EBCA6Bu;
  z ^= z >> 13;
  z *= 0xC2B2AE35u;
  z ^= z >> 16;
  return z;
}

// int8's per-element dither, 16 bits each, in (0, 1): one hash serves two
// elements. Elements come in groups of 16 (by index); hash j of a group
// gives element j its low half and element j + 8 its high half, so that a
// vector of eight hashes covers sixteen elements. Stochastic rounding with
// it is unbiased to within 2^-17 of a step.
LEEWAY_HOST_DEVICE inline float DitherUniform(uint32_t seed, uint32_t index) {
  const uint32_t h = DitherHash(seed, (index >> 4) * 8 + (index & 7));
  const uint32_t half = (index & 8) != 0 ? h >> 16 : h & 0xFFFFu;
  return (static_cast<float>(half) + 0.5f) * (1.0f / 65536.0f);
}

// The 32-bit dither seed int8 derives from a codec seed.
LEEWAY_HOST_DEVICE inline uint32_t DitherSeed(uint64_t seed) {
  return static_cast<uint32_t>(StreamSeed(seed, RandomStream::kRounding) >> 32) ^
         static_cast<uint32_t>(seed);
}

// Top-k's threshold sample: element j of m is drawn uniformly from the
// j-th of m equal strata of [0, n).
LEEWAY_HOST_DEVICE inline uint64_t TopKSampleIndex(uint64_t seed, uint64_t j,
                                                   uint64_t n, uint64_t m) {
  const double at =
      (static_cast<double>(j) +
       CounterUniform(StreamSeed(seed, RandomStream::kSampling), j)) *
      static_cast<double>(n) / static_cast<double>(m);
  const uint64_t i = static_cast<uint64_t>(at);
  return i < n ? i : n - 1;
}

// randomk splits [0, n) into k strata [j*n/k, (j+1)*n/k) and keeps one
// uniformly drawn element of each: indices ascend and are distinct, every
// element is kept with probability 1/(its stratum's size), and scaling the
// kept value by that size makes the estimate unbiased. Needs 0 < k <= n.
struct Stratum {
  uint64_t begin;
  uint64_t size;
};

LEEWAY_HOST_DEVICE inline Stratum RandomKStratum(uint64_t j, uint64_t n,
                                                 uint64_t k) {
  const uint64_t begin = j * n / k;
  return {begin, (j + 1) * n / k - begin};
}

LEEWAY_HOST_DEVICE inline uint64_t RandomKIndex(uint64_t seed, uint64_t j,
                                                uint64_t n, uint64_t k) {
  const Stratum s = RandomKStratum(j, n, k);
  uint64_t offset = static_cast<uint64_t>(
      static_cast<double>(
          CounterUniform(StreamSeed(seed, RandomStream::kSelection), j)) *
      static_cast<double>(s.size));
  if (offset >= s.size) offset = s.size - 1;  // float rounding at the top
  return s.begin + offset;
}

}  // namespace leeway

#endif  // LEEWAY_KERNELS_COUNTER_RANDOM_H_
