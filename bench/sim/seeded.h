// Seeded draws for the iteration model: a 64-bit mixer (splitmix64's
// finalizer) and a uniform double from its output, so that a run is the
// same for the same seed on every machine.
#ifndef LEEWAY_BENCH_SIM_SEEDED_H_
#define LEEWAY_BENCH_SIM_SEEDED_H_

#include <cstdint>

namespace leeway {
namespace sim {

inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits of a mixed value.
inline double UnitFrom(uint64_t mixed) {
  return static_cast<double>(mixed >> 11) / 9007199254740992.0;
}

// Uniform in 1 +- spread, for the (seed, n)-th draw.
inline double WeightFrom(uint64_t seed, uint64_t n, double spread) {
  return 1 + spread * (2 * UnitFrom(Mix(Mix(seed) ^ (n * 0x9e3779b97f4a7c15ULL))) - 1);
}

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_SEEDED_H_
