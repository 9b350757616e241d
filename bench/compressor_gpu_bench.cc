// compressor_gpu_bench: a worker's whole per-layer compression with the
// gradient in GPU memory (DeviceLayerCompressor: the check kernel, the
// momentum correction, the device codec, momentum masking, the payload to
// the host), against a device-to-device copy of the gradient run right
// before each call (the ratio is the median of those pairs), and the host
// compressor (LayerCompressor, one thread) on the same sizes for the
// speed-up a GPU worker gets. Successive calls take --gradients distinct
// gradients in turn, as a worker's steps do. Without a GPU (or a CUDA
// build) it says so and exits 0.
//
//   bazel run -c opt //bench:compressor_gpu_bench -- --sizes=1048576,16777216
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/compressor_inputs.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "kernels/codec_cuda.h"
#include "kernels/device_memory.h"
#include "worker/device_layer_compressor.h"
#include "worker/layer_compressor.h"

ABSL_FLAG(std::string, sizes, "1048576,16777216", "elements of the layer");
ABSL_FLAG(int, repeats, 7, "pairs per figure; medians are reported");
ABSL_FLAG(int, gradients, 4, "distinct gradients the compress calls take in turn");

namespace leeway {
namespace {

int Run() {
  if (!DeviceCodecsAvailable()) {
    std::printf("compressor_gpu_bench: no usable GPU (or a build without CUDA): skipped\n");
    return 0;
  }
  const int repeats = absl::GetFlag(FLAGS_repeats);
  const int gradients = std::max(1, absl::GetFlag(FLAGS_gradients));
  auto stream = DeviceStream::Create();
  if (!stream.ok()) return 1;
  void* s = stream->get();
  std::printf("| elements | codec | device compress ms | d2d copy / compress | "
              "host compress ms (1 thread) | host / device | d2d copy ms |\n"
              "|---:|---|---:|---:|---:|---:|---:|\n");
  absl::StatusOr<std::vector<size_t>> sizes = LayerSizes(absl::GetFlag(FLAGS_sizes));
  if (!sizes.ok()) {
    std::fprintf(stderr, "%s\n", std::string(sizes.status().message()).c_str());
    return 1;
  }
  for (size_t n : *sizes) {
    const std::vector<std::vector<float>> steps = StepGradients(n, gradients);
    std::vector<DeviceBuffer> device_steps;
    for (const auto& step : steps) {
      absl::StatusOr<DeviceBuffer> uploaded = UploadFloats(step, s);
      if (!uploaded.ok()) {
        std::fprintf(stderr, "%s\n", uploaded.status().ToString().c_str());
        return 1;
      }
      device_steps.push_back(*std::move(uploaded));
    }
    DeviceBuffer copy(sizeof(float) * n, s);
    if (!copy.status().ok()) return 1;
    auto copy_once = [&] {
      CopyOnDevice(copy.as<void>(), device_steps[0].as<void>(), sizeof(float) * n, s)
          .IgnoreError();
    };
    const std::vector<ChunkSlice> chunks = {ChunkSlice{0, 0, static_cast<uint32_t>(n)}};
    for (const CompressorPlan& row : CompressorPlans()) {
      const CodecParams params = row.params();
      auto device = DeviceLayerCompressor::Create(n, chunks, 0.9f);
      auto host = LayerCompressor::Create(n, chunks, 0.9f);
      if (!device.ok() || !host.ok()) return 1;
      std::vector<std::vector<uint8_t>> payloads;
      bool ok = true;
      size_t step = 0;
      const PairedTimes compress = MedianPaired(repeats, copy_once, [&] {
        CompressionStats stats;
        ok &= (*device)
                  ->CompressInto(device_steps[step++ % steps.size()].as<float>(), s, params,
                                 &payloads, &stats, nullptr)
                  .ok();
      });
      step = 0;
      const double host_s = MedianSeconds(repeats, [&] {
        CompressionStats stats;
        ok &= host->CompressInto(steps[step++ % steps.size()], params, &payloads, &stats,
                                 nullptr)
                  .ok();
      });
      if (!ok) {
        std::fprintf(stderr, "%s failed\n", row.name);
        return 1;
      }
      std::printf("| %zu | %s | %.3f | %.2f | %.2f | %.1f | %.3f |\n", n, row.name,
                  1e3 * compress.seconds, compress.ratio, 1e3 * host_s,
                  host_s / compress.seconds, 1e3 * compress.baseline_seconds);
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
