// compressor_bench: a worker's whole per-layer compression (LayerCompressor:
// the finite check and norm, DGC momentum correction for sparse codecs,
// the fused encode with error feedback, momentum masking, the residual's
// statistics), one thread, against the bare codec encode of the same
// elements and a memcpy of the gradient, each run right before it (the
// ratios are medians of those pairs). What the worker adds around the
// kernel is the difference. Successive compress calls take --gradients
// distinct gradients in turn, as a worker's steps do (top-k's threshold
// hint follows a residual in its steady state; one gradient repeated makes
// v grow every step instead).
//
//   bazel run -c opt //bench:compressor_bench -- --sizes=1048576,16777216
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/compressor_inputs.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "worker/layer_compressor.h"

ABSL_FLAG(std::string, sizes, "1048576,16777216", "elements of the layer");
ABSL_FLAG(int, repeats, 7, "pairs per figure; medians are reported");
ABSL_FLAG(int, gradients, 4, "distinct gradients the compress calls take in turn");

namespace leeway {
namespace {

int Run() {
  const int repeats = absl::GetFlag(FLAGS_repeats);
  const int gradients = absl::GetFlag(FLAGS_gradients);
  if (gradients < 1) {
    std::fprintf(stderr, "--gradients must be at least 1\n");
    return 1;
  }
  std::printf("| elements | codec | compress ms | memcpy / compress | "
              "compress time / bare encode time | bare encode ms | memcpy ms |\n"
              "|---:|---|---:|---:|---:|---:|---:|\n");
  absl::StatusOr<std::vector<size_t>> sizes = LayerSizes(absl::GetFlag(FLAGS_sizes));
  if (!sizes.ok()) {
    std::fprintf(stderr, "%s\n", std::string(sizes.status().message()).c_str());
    return 1;
  }
  for (size_t n : *sizes) {
    const std::vector<std::vector<float>> steps = StepGradients(n, gradients);
    std::vector<float> copy(n), residual(n, 0.0f);
    const std::vector<float>& g = steps[0];
    auto copy_once = [&] { std::memcpy(copy.data(), g.data(), 4 * n); };
    copy_once();
    for (const CompressorPlan& row : CompressorPlans()) {
      const CodecParams params = row.params();
      absl::StatusOr<LayerCompressor> layer = LayerCompressor::Create(
          n, {ChunkSlice{0, 0, static_cast<uint32_t>(n)}}, 0.9f);
      if (!layer.ok()) return 1;
      std::vector<std::vector<uint8_t>> payloads;
      std::vector<uint8_t> bare;
      bool ok = true;
      size_t step = 0;
      const PairedTimes compress = MedianPaired(repeats, copy_once, [&] {
        CompressionStats stats;
        ok &= layer->CompressInto(steps[step++ % steps.size()], params, &payloads, &stats,
                                  nullptr)
                  .ok();
      });
      const PairedTimes encode = MedianPaired(repeats, copy_once, [&] {
        ok &= Encode(g, absl::MakeSpan(residual), params, &bare).ok();
      });
      if (!ok) {
        std::fprintf(stderr, "%s failed\n", row.name);
        return 1;
      }
      std::printf("| %zu | %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", n, row.name,
                  1e3 * compress.seconds, compress.ratio,
                  compress.seconds / encode.seconds, 1e3 * encode.seconds,
                  1e3 * compress.baseline_seconds);
    }
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
