// What compressor_bench (host) and compressor_gpu_bench (device) measure
// alike: the plans a worker's layer is compressed with, each plan's
// parameters, the layer sizes of --sizes, and the distinct gradients that
// successive compress calls take in turn, as a worker's steps do.
#ifndef LEEWAY_BENCH_COMPRESSOR_INPUTS_H_
#define LEEWAY_BENCH_COMPRESSOR_INPUTS_H_

#include <cstddef>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kernels/codec.h"

namespace leeway {

struct CompressorPlan {
  const char* name;
  CodecId codec;
  float density;

  // One thread, as a worker's push thread compresses.
  CodecParams params() const {
    CodecParams p;
    p.codec = codec;
    p.density = density;
    p.threads = 1;
    return p;
  }
};

inline const std::vector<CompressorPlan>& CompressorPlans() {
  static const std::vector<CompressorPlan> plans = {{"topk0.1%", CodecId::kTopK, 0.001f},
                                                    {"topk1%", CodecId::kTopK, 0.01f},
                                                    {"int8", CodecId::kInt8, 1.0f},
                                                    {"fp16", CodecId::kFp16, 1.0f},
                                                    {"none", CodecId::kNone, 1.0f}};
  return plans;
}

// "1048576,16777216" -> sizes in [1, 2^31].
inline absl::StatusOr<std::vector<size_t>> LayerSizes(const std::string& text) {
  std::vector<size_t> sizes;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    size_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n == 0 || n > (size_t{1} << 31)) {
      return absl::InvalidArgumentError(absl::StrCat("bad size ", part));
    }
    sizes.push_back(n);
  }
  return sizes;
}

// `count` gradients of n elements, normal(0, 0.01), the same every run.
inline std::vector<std::vector<float>> StepGradients(size_t n, int count) {
  std::vector<std::vector<float>> steps(std::max(1, count), std::vector<float>(n));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  for (auto& step : steps) {
    for (float& x : step) x = normal(rng);
  }
  return steps;
}

}  // namespace leeway

#endif  // LEEWAY_BENCH_COMPRESSOR_INPUTS_H_
