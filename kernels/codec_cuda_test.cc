// The CUDA twin against the CPU codecs, on the shared test vectors: dense
// payloads byte for byte (sign: same bits, scales to float rounding, as
// the GPU sums a bucket's |v| in another order), sparse payloads with the same indices
// and values, residuals and decode_accumulate alike. Tagged "gpu"; where no
// GPU (or no CUDA build) exists it says so and checks only that the calls
// refuse cleanly.
#include "kernels/codec_cuda.h"

#include <cmath>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec.h"
#include "kernels/codec_test_util.h"
#include "kernels/gpu.h"
#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/codec_kernels.h"
#endif

namespace leeway {
namespace {

using testing::AllConfigs;
using testing::Describe;
using testing::Gradient;

TEST_CASE("without a GPU the device codecs refuse, and say why") {
  if (DeviceCodecsAvailable()) return;
  WARN("GPU parity tests skipped: no usable GPU or no CUDA build");
  std::vector<uint8_t> payload;
  float dummy = 0;
  CHECK(EncodeOnDevice(&dummy, nullptr, 1, CodecParams(), nullptr, &payload).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(DecodeAccumulateOnDevice(payload, 1.0f, &dummy, 1, nullptr).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(EncodeFormedOnDevice(&dummy, 1, CodecParams(), nullptr, &payload).code() ==
        absl::StatusCode::kFailedPrecondition);
}

#if LEEWAY_HAVE_CUDA

// Device copies of host vectors, freed at scope exit.
struct Device {
  float* p = nullptr;
  explicit Device(const std::vector<float>& host) {
    void* raw = nullptr;
    REQUIRE(cuda::Malloc(&raw, sizeof(float) * std::max<size_t>(1, host.size()), nullptr) == 0);
    p = static_cast<float*>(raw);
    REQUIRE(cuda::CopyToDevice(p, host.data(), sizeof(float) * host.size(), nullptr) == 0);
  }
  ~Device() { cuda::Free(p, nullptr); }
  std::vector<float> Read(size_t n) const {
    std::vector<float> host(n);
    REQUIRE(cuda::CopyToHost(host.data(), p, sizeof(float) * n, nullptr) == 0);
    return host;
  }
};

void CheckSamePayload(const CodecParams& params, const std::vector<uint8_t>& cpu,
                      const std::vector<uint8_t>& gpu, size_t n) {
  if (params.codec != CodecId::kSign) {
    REQUIRE(gpu == cpu);
    return;
  }
  REQUIRE(gpu.size() == cpu.size());
  // The bits, after the header and a scale per bucket.
  const size_t bits = 16 + 4 * ((n + params.sign_bucket - 1) / params.sign_bucket);
  CHECK(std::equal(cpu.begin() + bits, cpu.end(), gpu.begin() + bits));
  std::vector<float> a(n), b(n);
  REQUIRE(Decode(cpu, absl::MakeSpan(a)).ok());
  REQUIRE(Decode(gpu, absl::MakeSpan(b)).ok());
  for (size_t i = 0; i < n; ++i) REQUIRE(std::fabs(a[i] - b[i]) <= 1e-6f * std::fabs(a[i]));
}

TEST_CASE("device codecs produce the CPU's payloads and residuals") {
  if (!DeviceCodecsAvailable()) return;
  for (const CodecParams& params : AllConfigs(3)) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{1000}, size_t{1} << 20}) {
      INFO(Describe(params) << " n=" << n);
      const auto g = Gradient(n, n + 11);
      const auto r0 = Gradient(n, n + 12);
      std::vector<float> r_cpu = r0;
      std::vector<uint8_t> cpu, gpu;
      REQUIRE(Encode(g, absl::MakeSpan(r_cpu), params, &cpu).ok());
      Device dg(g), dr(r0);
      REQUIRE(EncodeOnDevice(dg.p, dr.p, n, params, nullptr, &gpu).ok());
      CheckSamePayload(params, cpu, gpu, n);
      const std::vector<float> r_gpu = dr.Read(n);
      for (size_t i = 0; i < n; ++i) {
        REQUIRE(std::fabs(r_gpu[i] - r_cpu[i]) <= 1e-6f * (1 + std::fabs(r_cpu[i])));
      }
      // decode_accumulate on the device matches the CPU's.
      std::vector<float> out_cpu(n, 0.5f);
      REQUIRE(DecodeAccumulate(cpu, -0.25f, absl::MakeSpan(out_cpu)).ok());
      Device out(std::vector<float>(n, 0.5f));
      REQUIRE(DecodeAccumulateOnDevice(cpu, -0.25f, out.p, n, nullptr).ok());
      REQUIRE(out.Read(n) == out_cpu);
    }
  }
}

TEST_CASE("a v formed on the device encodes as EncodeFormed does on the CPU") {
  if (!DeviceCodecsAvailable()) return;
  for (const CodecParams& params : AllConfigs(3)) {
    if (!IsSparse(params.codec)) continue;
    for (size_t n : {size_t{1}, size_t{1000}, size_t{1} << 20}) {
      INFO(Describe(params) << " n=" << n);
      std::vector<float> v_cpu = Gradient(n, n + 21);
      Device v_gpu(v_cpu);
      std::vector<uint8_t> cpu, gpu;
      REQUIRE(EncodeFormed(absl::MakeSpan(v_cpu), params, &cpu).ok());
      REQUIRE(EncodeFormedOnDevice(v_gpu.p, n, params, nullptr, &gpu).ok());
      REQUIRE(gpu == cpu);
      const std::vector<float> left = v_gpu.Read(n);
      for (size_t i = 0; i < n; ++i) {
        REQUIRE(std::fabs(left[i] - v_cpu[i]) <= 1e-6f * (1 + std::fabs(v_cpu[i])));
      }
    }
  }
  std::vector<uint8_t> payload;
  Device one(std::vector<float>{1.0f});
  CHECK(EncodeFormedOnDevice(one.p, 1, CodecParams(), nullptr, &payload).code() ==
        absl::StatusCode::kInvalidArgument);  // a dense codec
}

TEST_CASE("device codecs refuse NaN and corrupt payloads") {
  if (!DeviceCodecsAvailable()) return;
  std::vector<float> g = {1.0f, NAN, 2.0f};
  Device dg(g);
  std::vector<uint8_t> payload;
  CHECK(EncodeOnDevice(dg.p, nullptr, 3, CodecParams(), nullptr, &payload).code() ==
        absl::StatusCode::kInvalidArgument);
  std::vector<uint8_t> truncated = {0x4C, 0x43, 1};
  CHECK_FALSE(DecodeAccumulateOnDevice(truncated, 1.0f, dg.p, 3, nullptr).ok());
}

#endif  // LEEWAY_HAVE_CUDA

}  // namespace
}  // namespace leeway
