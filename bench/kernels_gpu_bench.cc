// kernels_gpu_bench: the device codecs (kernels/codec_cuda.h) in GB/s of
// fp32 input, against a device-to-device copy of the same bytes measured
// in the same run. Encode with error feedback, as a GPU worker runs it, and
// decode_accumulate from a host payload. Medians of --repeats runs; each
// call includes its own synchronization and the payload's copy to or from
// the host. Without a GPU (or a CUDA build) it says so and exits 0.
//
//   bazel run -c opt //bench:kernels_gpu_bench -- --sizes=67108864
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "kernels/codec_cuda.h"
#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/codec_kernels.h"
#endif

ABSL_FLAG(std::string, sizes, "1048576,16777216,67108864", "elements");
ABSL_FLAG(int, repeats, 5, "runs per figure; the median is reported");

namespace leeway {
namespace {

int Run() {
  if (!DeviceCodecsAvailable()) {
    std::printf("kernels_gpu_bench: no usable GPU (or a build without CUDA): skipped\n");
    return 0;
  }
#if LEEWAY_HAVE_CUDA
  const int repeats = absl::GetFlag(FLAGS_repeats);
  struct Row {
    const char* name;
    CodecId codec;
    float density;
    CodecId values;
  };
  const Row rows[] = {{"none", CodecId::kNone, 1, CodecId::kNone},
                      {"fp16", CodecId::kFp16, 1, CodecId::kNone},
                      {"int8", CodecId::kInt8, 1, CodecId::kNone},
                      {"sign", CodecId::kSign, 1, CodecId::kNone},
                      {"topk0.1%", CodecId::kTopK, 0.001f, CodecId::kNone},
                      {"topk1%", CodecId::kTopK, 0.01f, CodecId::kNone},
                      {"topk10%", CodecId::kTopK, 0.1f, CodecId::kNone},
                      {"topk1%+int8", CodecId::kTopK, 0.01f, CodecId::kInt8},
                      {"randomk1%", CodecId::kRandomK, 0.01f, CodecId::kNone}};
  std::printf("| elements | codec | encode GB/s | encode / d2d copy | "
              "decode_accumulate GB/s | decode_accumulate / d2d copy | d2d copy GB/s |\n"
              "|---:|---|---:|---:|---:|---:|---:|\n");
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',')) {
    size_t n = 0;
    if (!absl::SimpleAtoi(text, &n) || n == 0) return 1;
    std::vector<float> g(n);
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.01f);
    for (auto& x : g) x = normal(rng);
    void *dg = nullptr, *dr = nullptr, *dcopy = nullptr;
    if (cuda::Malloc(&dg, 4 * n, nullptr) || cuda::Malloc(&dr, 4 * n, nullptr) ||
        cuda::Malloc(&dcopy, 4 * n, nullptr) ||
        cuda::CopyToDevice(dg, g.data(), 4 * n, nullptr)) {
      std::fprintf(stderr, "device allocation failed\n");
      return 1;
    }
    const double bytes = 4.0 * n;
    const double copy_s = MedianSeconds(repeats, [&] { cuda::CopyOnDevice(dcopy, dg, 4 * n, nullptr); });
    for (const Row& row : rows) {
      CodecParams p;
      p.codec = row.codec;
      p.density = row.density;
      p.values = row.values;
      std::vector<float> zeros(n, 0.0f);
      cuda::CopyToDevice(dr, zeros.data(), 4 * n, nullptr);
      std::vector<uint8_t> payload;
      bool ok = true;
      const double encode_s = MedianSeconds(repeats, [&] {
        ok &= EncodeOnDevice(static_cast<float*>(dg), static_cast<float*>(dr), n, p,
                             nullptr, &payload).ok();
      });
      const double decode_s = MedianSeconds(repeats, [&] {
        ok &= DecodeAccumulateOnDevice(payload, -0.1f, static_cast<float*>(dcopy), n,
                                       nullptr).ok();
      });
      if (!ok) {
        std::fprintf(stderr, "%s failed on the device\n", row.name);
        return 1;
      }
      std::printf("| %zu | %s | %.1f | %.2f | %.1f | %.2f | %.1f |\n", n, row.name,
                  bytes / encode_s / 1e9, copy_s / encode_s, bytes / decode_s / 1e9,
                  copy_s / decode_s, bytes / copy_s / 1e9);
    }
    cuda::Free(dg, nullptr);
    cuda::Free(dr, nullptr);
    cuda::Free(dcopy, nullptr);
  }
#endif
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
