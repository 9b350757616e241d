// Batches shared by the MLP tests (CPU and GPU): points around one of a
// few centres, separable, so that an MLP learns them. Deterministic from
// the seed.
#ifndef LEEWAY_WORKER_MLP_TEST_UTIL_H_
#define LEEWAY_WORKER_MLP_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

namespace leeway {
namespace testing {

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> labels;
};

inline Batch Blobs(int n, int features, int classes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  Batch b;
  for (int i = 0; i < n; ++i) {
    const int label = i % classes;
    b.labels.push_back(static_cast<uint8_t>(label));
    for (int f = 0; f < features; ++f) {
      b.x.push_back((f % classes == label ? 1.0f : 0.0f) + noise(rng));
    }
  }
  return b;
}

}  // namespace testing
}  // namespace leeway

#endif  // LEEWAY_WORKER_MLP_TEST_UTIL_H_
