// Test vectors shared by the codec tests (CPU and CUDA parity): gradients
// with heavy tails, like real ones, and every codec configuration worth
// testing. Deterministic from their seeds.
#ifndef LEEWAY_KERNELS_CODEC_TEST_UTIL_H_
#define LEEWAY_KERNELS_CODEC_TEST_UTIL_H_

#include <random>
#include <string>
#include <vector>

#include "kernels/codec.h"

namespace leeway {
namespace testing {

inline std::vector<float> Gradient(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::student_t_distribution<float> heavy(3.0f);
  std::vector<float> g(n);
  for (auto& x : g) x = 0.01f * heavy(rng);
  return g;
}

inline CodecParams Params(CodecId codec, uint64_t seed = 1,
                          CodecId values = CodecId::kNone) {
  CodecParams p;
  p.codec = codec;
  p.int8_bucket = 256;
  p.seed = seed;
  p.density = 0.1f;
  p.threshold = 0.01f;
  p.values = values;
  return p;
}

inline std::string Describe(const CodecParams& p) {
  std::string name = CodecName(p.codec);
  if (IsSparse(p.codec) && p.values != CodecId::kNone) {
    name += std::string("+") + CodecName(p.values);
  }
  return name;
}

inline std::vector<CodecParams> DenseConfigs(uint64_t seed = 1) {
  std::vector<CodecParams> all;
  for (CodecId c : {CodecId::kNone, CodecId::kFp16, CodecId::kBf16,
                    CodecId::kInt8, CodecId::kSign}) {
    all.push_back(Params(c, seed));
  }
  return all;
}

inline std::vector<CodecParams> SparseConfigs(uint64_t seed = 1) {
  std::vector<CodecParams> all;
  for (CodecId values : {CodecId::kNone, CodecId::kFp16, CodecId::kBf16,
                         CodecId::kInt8}) {
    all.push_back(Params(CodecId::kTopK, seed, values));
  }
  all.push_back(Params(CodecId::kRandomK, seed));
  all.push_back(Params(CodecId::kRandomK, seed, CodecId::kInt8));
  all.push_back(Params(CodecId::kThreshold, seed));
  all.push_back(Params(CodecId::kThreshold, seed, CodecId::kFp16));
  return all;
}

inline std::vector<CodecParams> AllConfigs(uint64_t seed = 1) {
  std::vector<CodecParams> all = DenseConfigs(seed);
  for (const CodecParams& p : SparseConfigs(seed)) all.push_back(p);
  return all;
}

}  // namespace testing
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CODEC_TEST_UTIL_H_
