#include "worker/device_layer_compressor.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "kernels/codec_cuda.h"

#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/codec_kernels.h"
#include "kernels/cuda/sparse_input_kernels.h"
#endif

namespace leeway {

DeviceLayerCompressor::DeviceLayerCompressor(uint64_t elements, std::vector<ChunkSlice> chunks,
                                             float momentum)
    : elements_(elements), chunks_(std::move(chunks)), momentum_(momentum) {}

#if LEEWAY_HAVE_CUDA

namespace {

// Why a checked gradient was refused: its own element, or the overflow of
// the corrected sum.
absl::Status Refusal(const float* gradient, uint64_t at, void* stream) {
  float g = 0;
  absl::Status copied = CopyToHost(&g, gradient + at, sizeof(float), stream);
  if (!copied.ok()) return copied;
  if (!std::isfinite(g)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient holds ", g, " at ", at, ": nothing was encoded"));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "momentum-corrected gradient plus residual overflows at ", at, ": nothing was encoded"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceLayerCompressor>> DeviceLayerCompressor::Create(
    uint64_t elements, std::vector<ChunkSlice> chunks, float momentum) {
  if (!DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError("no usable GPU: push from host memory");
  }
  absl::Status valid = ValidateLayerCompression(elements, chunks, momentum);
  if (!valid.ok()) return valid;
  std::unique_ptr<DeviceLayerCompressor> layer(
      new DeviceLayerCompressor(elements, std::move(chunks), momentum));
  const size_t bytes = sizeof(float) * elements;
  layer->residual_ = DeviceBuffer(bytes, nullptr);
  if (!layer->residual_.status().ok()) return layer->residual_.status();
  LEEWAY_CUDA_OR_RETURN(cuda::Zero(layer->residual_.as<float>(), elements, nullptr), "zero");
  if (momentum > 0) {
    layer->velocity_ = DeviceBuffer(bytes, nullptr);
    if (!layer->velocity_.status().ok()) return layer->velocity_.status();
    LEEWAY_CUDA_OR_RETURN(cuda::Zero(layer->velocity_.as<float>(), elements, nullptr), "zero");
  }
  // The allocations and zeroes are in the default stream's order; the
  // pushes come on the caller's streams.
  LEEWAY_CUDA_OR_RETURN(cuda::Synchronize(nullptr), "zero");
  return layer;
}

absl::Status DeviceLayerCompressor::CompressInto(const float* gradient, void* stream,
                                                 const CodecParams& params,
                                                 std::vector<std::vector<uint8_t>>* payloads,
                                                 CompressionStats* stats,
                                                 const std::function<void(size_t)>& ready) {
  if (gradient == nullptr && elements_ > 0) {
    return absl::InvalidArgumentError("no gradient (null device pointer)");
  }
  absl::Status valid = ValidateParams(params);
  if (!valid.ok()) return valid;
  payloads->assign(chunks_.size(), {});
  const bool measure = stats != nullptr && stats->measure_residual;
  absl::StatusOr<Sums> sums = IsSparse(params.codec)
                                  ? CompressSparse(gradient, stream, params, payloads, ready)
                                  : CompressDense(gradient, stream, params, payloads, ready);
  if (!sums.ok()) return sums.status();
  double residual = 0;
  if (measure && sums->gradient > 0) {
    absl::StatusOr<double> measured = ResidualSumOfSquares(stream);
    if (!measured.ok()) return measured.status();
    residual = *measured;
  }
  FillCompressionStats(sums->gradient, residual, *payloads, stats);
  return absl::OkStatus();
}

absl::StatusOr<DeviceLayerCompressor::Sums> DeviceLayerCompressor::CompressSparse(
    const float* gradient, void* stream, const CodecParams& params,
    std::vector<std::vector<uint8_t>>* payloads, const std::function<void(size_t)>& ready) {
  float* velocity = momentum_ > 0 ? velocity_.as<float>() : nullptr;
  float* residual = residual_.as<float>();
  cuda::InputCheck check;
  LEEWAY_CUDA_OR_RETURN(
      cuda::CheckSparseInput(momentum_, velocity, gradient, residual, elements_, stream, &check),
      "input check");
  if (!check.finite) return Refusal(gradient, check.first_bad, stream);
  LEEWAY_CUDA_OR_RETURN(
      cuda::WriteSparseInput(momentum_, velocity, gradient, residual, elements_, stream),
      "momentum correction");
  velocity_cleared_ = momentum_ == 0;
  std::vector<uint32_t> sent;
  std::vector<float> values;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    std::vector<uint8_t>& payload = (*payloads)[c];
    absl::Status encoded = EncodeFormedOnDevice(residual + slice.offset, slice.elements,
                                                ChunkParams(params, slice), stream, &payload);
    if (!encoded.ok()) return encoded;
    if (velocity != nullptr) {
      // Momentum factor masking: the sent elements' momentum starts over.
      encoded = DecodePairs(payload, slice.elements, &sent, &values);
      if (!encoded.ok()) return encoded;
      DeviceBuffer indices(sizeof(uint32_t) * sent.size(), stream);
      if (!indices.status().ok()) return indices.status();
      encoded =
          CopyToDevice(indices.as<void>(), sent.data(), sizeof(uint32_t) * sent.size(), stream);
      if (!encoded.ok()) return encoded;
      LEEWAY_CUDA_OR_RETURN(
          cuda::ZeroAt(velocity + slice.offset, indices.as<uint32_t>(), sent.size(), stream),
          "momentum masking");
    }
    if (ready) ready(c);
  }
  return Sums{check.gradient, 0};
}

absl::StatusOr<DeviceLayerCompressor::Sums> DeviceLayerCompressor::CompressDense(
    const float* gradient, void* stream, const CodecParams& params,
    std::vector<std::vector<uint8_t>>* payloads, const std::function<void(size_t)>& ready) {
  cuda::InputCheck check;
  LEEWAY_CUDA_OR_RETURN(
      cuda::CheckSparseInput(0.0f, nullptr, gradient, nullptr, elements_, stream, &check),
      "input check");
  if (!check.finite) return Refusal(gradient, check.first_bad, stream);
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    absl::Status encoded =
        EncodeOnDevice(gradient + slice.offset, residual_.as<float>() + slice.offset,
                       slice.elements, ChunkParams(params, slice), stream, &(*payloads)[c]);
    if (!encoded.ok()) return encoded;
    if (ready) ready(c);
  }
  // Without the sparse phase's correction its momentum would go stale.
  if (!velocity_cleared_) {
    LEEWAY_CUDA_OR_RETURN(cuda::Zero(velocity_.as<float>(), elements_, stream), "zero");
  }
  velocity_cleared_ = true;
  return Sums{check.gradient, 0};
}

absl::StatusOr<double> DeviceLayerCompressor::ResidualSumOfSquares(void* stream) const {
  cuda::InputCheck check;
  LEEWAY_CUDA_OR_RETURN(cuda::CheckSparseInput(0.0f, nullptr, residual_.as<float>(), nullptr,
                                               elements_, stream, &check),
                        "residual norm");
  return check.gradient;
}

absl::StatusOr<std::vector<float>> DeviceLayerCompressor::Residual(void* stream) const {
  return DownloadFloats(residual_, elements_, stream);
}

absl::StatusOr<std::vector<float>> DeviceLayerCompressor::Momentum(void* stream) const {
  if (velocity_.as<void>() == nullptr) return std::vector<float>(elements_, 0.0f);  // momentum 0
  return DownloadFloats(velocity_, elements_, stream);
}

#else  // !LEEWAY_HAVE_CUDA

namespace {
absl::Status NoCuda() {
  return absl::FailedPreconditionError("built without CUDA: push from host memory");
}
}  // namespace

absl::StatusOr<std::unique_ptr<DeviceLayerCompressor>> DeviceLayerCompressor::Create(
    uint64_t, std::vector<ChunkSlice>, float) {
  return NoCuda();
}
absl::Status DeviceLayerCompressor::CompressInto(const float*, void*, const CodecParams&,
                                                 std::vector<std::vector<uint8_t>>*,
                                                 CompressionStats*,
                                                 const std::function<void(size_t)>&) {
  return NoCuda();
}
absl::StatusOr<std::vector<float>> DeviceLayerCompressor::Residual(void*) const { return NoCuda(); }
absl::StatusOr<std::vector<float>> DeviceLayerCompressor::Momentum(void*) const { return NoCuda(); }

#endif  // LEEWAY_HAVE_CUDA

}  // namespace leeway
