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
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "worker/layer_compressor.h"

ABSL_FLAG(std::string, sizes, "1048576,16777216", "elements of the layer");
ABSL_FLAG(int, repeats, 7, "pairs per figure; medians are reported");
ABSL_FLAG(int, gradients, 4, "distinct gradients the compress calls take in turn");

namespace leeway {
namespace {

struct Row {
  const char* name;
  CodecId codec;
  float density;
};

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
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    size_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0 || n > (size_t{1} << 31)) {
      std::fprintf(stderr, "bad size %s\n", std::string(text).c_str());
      return 1;
    }
    std::vector<std::vector<float>> steps(gradients, std::vector<float>(n));
    std::vector<float> copy(n), residual(n, 0.0f);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    for (auto& step : steps) {
      for (float& x : step) x = normal(rng);
    }
    const std::vector<float>& g = steps[0];
    auto copy_once = [&] { std::memcpy(copy.data(), g.data(), 4 * n); };
    copy_once();
    for (const Row& row : {Row{"topk0.1%", CodecId::kTopK, 0.001f},
                           Row{"topk1%", CodecId::kTopK, 0.01f},
                           Row{"int8", CodecId::kInt8, 1.0f},
                           Row{"fp16", CodecId::kFp16, 1.0f},
                           Row{"none", CodecId::kNone, 1.0f}}) {
      CodecParams params;
      params.codec = row.codec;
      params.density = row.density;
      params.threads = 1;
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
