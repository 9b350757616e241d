// scatter_bench: sparse values landing at ascending indices in a large
// array (a worker applying a top-k pull reply, a server's sparse apply),
// with kernels/indexed_prefetch.h's prefetching loop against the plain
// loop and against a memcpy of the payload's bytes (indices and values),
// each pair run back to back; ratios are medians of the pairs' ratios.
//
//   bazel run -c opt //bench:scatter_bench -- --elements=25557032
//
// Defaults: ResNet-50's parameter count, densities 0.1%, 1% and 10%.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "kernels/indexed_prefetch.h"

ABSL_FLAG(int64_t, elements, 25557032, "destination elements");
ABSL_FLAG(std::string, densities, "0.001,0.01,0.1", "shares of the elements written");
ABSL_FLAG(int, repeats, 9, "pairs per figure; medians are reported");

namespace leeway {
namespace {

// The loop ScatterValues replaces; noinline so that both run as called.
__attribute__((noinline)) void PlainScatter(const std::vector<uint32_t>& indices,
                                            const std::vector<float>& values, float* dest) {
  for (size_t j = 0; j < indices.size(); ++j) dest[indices[j]] = values[j];
}

int Run() {
  const int64_t n = absl::GetFlag(FLAGS_elements);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  if (n <= 0 || n > UINT32_MAX) {
    std::fprintf(stderr, "--elements must be in [1, 2^32)\n");
    return 1;
  }
  std::vector<float> dest(n, 0.0f);
  std::printf(
      "| elements | density | written | plain ms | prefetched ms | plain / prefetched | "
      "memcpy of the payload / prefetched |\n|---:|---:|---:|---:|---:|---:|---:|\n");
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_densities), ',')) {
    double density = 0;
    if (!absl::SimpleAtod(text, &density) || !(density > 0 && density <= 1)) {
      std::fprintf(stderr, "bad density %s\n", std::string(text).c_str());
      return 1;
    }
    std::mt19937 rng(1);
    std::uniform_real_distribution<double> coin(0, 1);
    std::vector<uint32_t> indices;
    for (int64_t i = 0; i < n; ++i) {
      if (coin(rng) < density) indices.push_back(static_cast<uint32_t>(i));
    }
    std::vector<float> values(indices.size(), 1.0f);
    // The baseline: the payload's bytes copied once, as a landing would.
    std::vector<uint8_t> payload(8 * indices.size()), landed(payload.size());
    auto copy = [&] { std::memcpy(landed.data(), payload.data(), payload.size()); };
    auto plain = [&] { PlainScatter(indices, values, dest.data()); };
    auto prefetched = [&] { ScatterValues(indices, values, absl::MakeSpan(dest)); };
    const PairedTimes against_plain = MedianPaired(repeats, plain, prefetched);
    const PairedTimes against_copy = MedianPaired(repeats, copy, prefetched);
    std::printf("| %lld | %g | %zu | %.3f | %.3f | %.2f | %.3f |\n", static_cast<long long>(n),
                density, indices.size(), against_plain.baseline_seconds * 1e3,
                against_plain.seconds * 1e3, against_plain.ratio, against_copy.ratio);
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
