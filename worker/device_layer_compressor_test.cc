// DeviceLayerCompressor against LayerCompressor on the shared test
// vectors: the same payloads, velocity and residual over a run of pushes
// that switches plans, and refusals that leave the state as it was.
// Tagged "gpu"; without a GPU (or a CUDA build) it checks that Create
// refuses and says so.
#include "worker/device_layer_compressor.h"

#include <cmath>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec_cuda.h"
#include "kernels/codec_test_util.h"
#include "kernels/device_memory.h"
#include "worker/layer_compressor.h"

namespace leeway {
namespace {

using testing::Describe;
using testing::Gradient;
using testing::Params;

std::vector<ChunkSlice> ThreeChunks(uint64_t n) {
  const uint32_t third = static_cast<uint32_t>(n / 3);
  return {{4, 0, third},
          {9, third, third},
          {2, 2 * uint64_t{third}, static_cast<uint32_t>(n - 2 * third)}};
}

TEST_CASE("without a GPU the device compressor refuses, and says why") {
  if (DeviceCodecsAvailable()) return;
  WARN("device compressor tests skipped: no usable GPU or no CUDA build");
  auto layer = DeviceLayerCompressor::Create(10, {{0, 0, 10}}, 0.9f);
  CHECK(layer.status().code() == absl::StatusCode::kFailedPrecondition);
}

// The gradient, uploaded; freed at scope exit.
struct DeviceGradient {
  DeviceBuffer buffer;
  explicit DeviceGradient(const std::vector<float>& g) {
    auto uploaded = UploadFloats(g, nullptr);
    REQUIRE(uploaded.ok());
    buffer = *std::move(uploaded);
  }
  const float* p() const { return buffer.as<float>(); }
};

void RequireClose(const std::vector<float>& gpu, absl::Span<const float> cpu) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(gpu[i] - cpu[i]) <= 1e-6f * (1 + std::fabs(cpu[i])));
  }
}

TEST_CASE("device pushes produce the host compressor's payloads and state") {
  if (!DeviceCodecsAvailable()) return;
  const uint64_t n = (uint64_t{1} << 20) + 5;
  // Plans as a controller switches them: sparse, dense, uncompressed, sparse.
  std::vector<CodecParams> plan = {Params(CodecId::kTopK),
                                   Params(CodecId::kTopK),
                                   Params(CodecId::kTopK, 1, CodecId::kFp16),
                                   Params(CodecId::kInt8),
                                   Params(CodecId::kNone),
                                   Params(CodecId::kRandomK),
                                   Params(CodecId::kThreshold),
                                   Params(CodecId::kTopK)};
  plan[1].density = 0.001f;
  for (float momentum : {0.0f, 0.9f}) {
    auto host = LayerCompressor::Create(n, ThreeChunks(n), momentum);
    auto device = DeviceLayerCompressor::Create(n, ThreeChunks(n), momentum);
    REQUIRE(host.ok());
    REQUIRE(device.ok());
    for (size_t step = 0; step < plan.size(); ++step) {
      CodecParams params = plan[step];
      params.seed = 100 + step;
      INFO("momentum " << momentum << " step " << step << " " << Describe(params));
      const std::vector<float> g = Gradient(n, 50 + step);
      DeviceGradient dg(g);
      std::vector<std::vector<uint8_t>> cpu, gpu;
      CompressionStats cpu_stats, gpu_stats;
      REQUIRE(host->CompressInto(g, params, &cpu, &cpu_stats, nullptr).ok());
      size_t ready = 0;
      REQUIRE((*device)
                  ->CompressInto(dg.p(), nullptr, params, &gpu, &gpu_stats,
                                 [&](size_t c) { REQUIRE(c == ready++); })
                  .ok());
      CHECK(ready == 3);
      REQUIRE(gpu == cpu);
      CHECK(gpu_stats.payload_bytes == cpu_stats.payload_bytes);
      CHECK(std::fabs(gpu_stats.gradient_norm - cpu_stats.gradient_norm) <=
            1e-9 * cpu_stats.gradient_norm);
      CHECK(std::fabs(gpu_stats.residual_ratio - cpu_stats.residual_ratio) <=
            1e-5 * (1 + cpu_stats.residual_ratio));
      auto residual = (*device)->Residual(nullptr);
      auto velocity = (*device)->Momentum(nullptr);
      REQUIRE(residual.ok());
      REQUIRE(velocity.ok());
      RequireClose(*residual, host->residual());
      RequireClose(*velocity, host->momentum());
    }
  }
}

TEST_CASE("a device gradient with NaN or an overflowing sum is refused, state kept") {
  if (!DeviceCodecsAvailable()) return;
  const uint64_t n = 5000;
  auto device = DeviceLayerCompressor::Create(n, ThreeChunks(n), 0.9f);
  REQUIRE(device.ok());
  std::vector<std::vector<uint8_t>> payloads;
  const std::vector<float> g = Gradient(n, 7);
  DeviceGradient first(g);
  REQUIRE(
      (*device)
          ->CompressInto(first.p(), nullptr, Params(CodecId::kTopK), &payloads, nullptr, nullptr)
          .ok());
  const auto residual = (*device)->Residual(nullptr);
  const auto velocity = (*device)->Momentum(nullptr);
  REQUIRE(residual.ok());
  REQUIRE(velocity.ok());
  for (CodecId codec : {CodecId::kTopK, CodecId::kInt8}) {
    std::vector<float> bad = g;
    bad[4321] = NAN;
    DeviceGradient nan(bad);
    absl::Status refused =
        (*device)->CompressInto(nan.p(), nullptr, Params(codec), &payloads, nullptr, nullptr);
    CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
    CHECK(refused.message().find("at 4321") != std::string::npos);
    REQUIRE((*device)->Residual(nullptr).value() == *residual);
    REQUIRE((*device)->Momentum(nullptr).value() == *velocity);
  }
  // 2e38 stays behind a threshold it does not reach; the same again makes
  // u + v overflow although every gradient is finite.
  CodecParams high = Params(CodecId::kThreshold);
  high.threshold = 3.4e38f;
  std::vector<float> large = g;
  large[77] = 2e38f;
  DeviceGradient big(large);
  REQUIRE((*device)->CompressInto(big.p(), nullptr, high, &payloads, nullptr, nullptr).ok());
  const auto kept = (*device)->Residual(nullptr);
  REQUIRE(kept.ok());
  REQUIRE((*kept)[77] > 1.9e38f);
  absl::Status refused =
      (*device)->CompressInto(big.p(), nullptr, high, &payloads, nullptr, nullptr);
  CHECK(refused.code() == absl::StatusCode::kInvalidArgument);
  CHECK(refused.message().find("overflows at 77") != std::string::npos);
  REQUIRE((*device)->Residual(nullptr).value() == *kept);
}

TEST_CASE("a null device gradient and bad layers are refused") {
  if (!DeviceCodecsAvailable()) return;
  CHECK(DeviceLayerCompressor::Create(10, {{0, 0, 9}}, 0.9f).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(DeviceLayerCompressor::Create(10, {{0, 0, 10}}, 1.0f).status().code() ==
        absl::StatusCode::kInvalidArgument);
  auto device = DeviceLayerCompressor::Create(10, {{0, 0, 10}}, 0.9f);
  REQUIRE(device.ok());
  std::vector<std::vector<uint8_t>> payloads;
  CHECK((*device)
            ->CompressInto(nullptr, nullptr, Params(CodecId::kTopK), &payloads, nullptr, nullptr)
            .code() == absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace leeway
