// Orchestrates the device codecs: the same layout code as the CPU path
// (dense_codec.h, sparse_codec.h, topk_select.h), the element work in
// kernels/cuda/codec_kernels.cu.
#include "kernels/codec_cuda.h"

#include "absl/strings/str_cat.h"
#include "kernels/device_memory.h"
#include "kernels/gpu.h"

#if LEEWAY_HAVE_CUDA
#include <algorithm>

#include "kernels/counter_random.h"
#include "kernels/cuda/codec_kernels.h"
#include "kernels/dense_codec.h"
#include "kernels/half.h"
#include "kernels/parsed_payload.h"
#include "kernels/payload.h"
#include "kernels/sparse_codec.h"
#include "kernels/topk_select.h"
#endif

namespace leeway {

#if LEEWAY_HAVE_CUDA
namespace {

using codec_internal::DenseBodyBytes;

// The exact top-k of v = g + r (r: fused, left holding v) into `indices`
// (device, k entries, ascending), as SelectTopK does on the CPU.
absl::Status SelectTopKOnDevice(const float* g, float* r, size_t n, size_t k,
                                uint64_t seed, void* stream, uint32_t* indices) {
  const float* v = r != nullptr ? r : g;
  bool formed = r == nullptr;
  if (TopKSampled(n, k)) {
    const size_t m = TopKSampleSize(n, k);
    std::vector<uint32_t> sample(m);
    LEEWAY_CUDA_OR_RETURN(cuda::SampleKeys(g, r, n, m, seed, sample.data(), stream), "sampling");
    for (double margin : kTopKMargins) {
      const size_t rank = TopKThresholdRank(n, k, m, margin);
      if (rank >= m) break;
      const size_t cap = TopKCandidateCap(n, rank, m);
      DeviceBuffer candidates(sizeof(uint32_t) * cap, stream);
      if (!candidates.status().ok()) return candidates.status();
      size_t count = 0;
      LEEWAY_CUDA_OR_RETURN(cuda::GatherAtLeast(formed ? v : g, formed ? nullptr : r, n,
                                                TopKThresholdKey(sample, rank), cap,
                                                candidates.as<uint32_t>(), &count, stream),
                            "gather");
      formed = true;
      if (count > cap) break;
      if (count < k) continue;
      return CudaStatus(cuda::KeepTopK(v, candidates.as<uint32_t>(), count, k, indices, stream),
                        "top-k refinement");
    }
  }
  // Small tensors and estimates that missed: the CPU's exact path.
  if (!formed) LEEWAY_CUDA_OR_RETURN(cuda::AddInto(g, r, n, stream), "add");
  std::vector<float> host(n);
  LEEWAY_CUDA_OR_RETURN(cuda::CopyToHost(host.data(), v, sizeof(float) * n, stream), "copy");
  std::vector<uint32_t> exact;
  SelectTopKExact(host, k, &exact);
  return CudaStatus(cuda::CopyToDevice(indices, exact.data(), sizeof(uint32_t) * k, stream),
                    "copy");
}

// The kept indices of a sparse codec (device); with r, r holds v after.
absl::Status SelectOnDevice(const CodecParams& p, const float* g, float* r,
                            size_t n, void* stream, DeviceBuffer* out, size_t* k) {
  const size_t keep = SparseKeep(p.density, n);
  *k = keep;
  switch (p.codec) {
    case CodecId::kTopK:
      return SelectTopKOnDevice(g, r, n, keep, p.seed, stream, out->as<uint32_t>());
    case CodecId::kRandomK:
      if (r != nullptr) LEEWAY_CUDA_OR_RETURN(cuda::AddInto(g, r, n, stream), "add");
      return CudaStatus(cuda::RandomKIndices(p.seed, n, keep, out->as<uint32_t>(), stream),
                        "randomk");
    default: {  // threshold
      DeviceBuffer candidates(sizeof(uint32_t) * std::max<size_t>(1, keep), stream);
      if (!candidates.status().ok()) return candidates.status();
      size_t count = 0;
      LEEWAY_CUDA_OR_RETURN(cuda::GatherAtLeast(g, r, n, MagnitudeKey(p.threshold), keep,
                                                candidates.as<uint32_t>(), &count, stream),
                            "gather");
      const float* v = r != nullptr ? r : g;
      if (count > keep) {  // more pass than the cap: the largest of them
        return SelectTopKOnDevice(v, nullptr, n, keep, p.seed, stream, out->as<uint32_t>());
      }
      *k = count;  // all of them, put in ascending order
      return CudaStatus(
          cuda::KeepTopK(v, candidates.as<uint32_t>(), count, count, out->as<uint32_t>(), stream),
          "sort");
    }
  }
}

// The payload of v = g + r (v = g without r). What was not sent is left in
// r, or, for a v formed by the caller (g is v, r null), in `formed`.
absl::Status EncodeSparseOnDevice(const CodecParams& p, const float* g, float* r, float* formed,
                                  size_t n, void* stream, std::vector<uint8_t>* payload) {
  DeviceBuffer indices(sizeof(uint32_t) * std::max<size_t>(1, SparseKeep(p.density, n)),
                       stream);
  if (!indices.status().ok()) return indices.status();
  size_t k = 0;
  absl::Status selected = SelectOnDevice(p, g, r, n, stream, &indices, &k);
  if (!selected.ok()) return selected;
  const float* v = r != nullptr ? r : g;
  float* residual = r != nullptr ? r : formed;
  const uint32_t bucket = p.values == CodecId::kInt8 ? p.int8_bucket : 0;
  const uint8_t values = static_cast<uint8_t>(p.values);
  DeviceBuffer kept(sizeof(float) * std::max<size_t>(1, k), stream);
  DeviceBuffer body(std::max<size_t>(1, DenseBodyBytes(p.values, k, bucket)), stream);
  if (!kept.status().ok()) return kept.status();
  if (!body.status().ok()) return body.status();
  const bool randomk = p.codec == CodecId::kRandomK;
  LEEWAY_CUDA_OR_RETURN(
      cuda::GatherValues(v, indices.as<uint32_t>(), k, randomk && residual == nullptr, n,
                         kept.as<float>(), stream),
      "gather values");
  LEEWAY_CUDA_OR_RETURN(cuda::EncodeDense(values, bucket, p.seed, k, kept.as<float>(), nullptr,
                                          body.as<uint8_t>(), stream),
                        "encode values");
  // What was sent, decoded as the server will, leaves the residual.
  if (residual != nullptr) {
    LEEWAY_CUDA_OR_RETURN(cuda::DecodeDense(values, bucket, k, body.as<uint8_t>(),
                                            indices.as<uint32_t>(), -1.0f, true, residual, stream),
                          "residual");
  }
  // randomk's payload holds no indices (only their count matters here).
  std::vector<uint32_t> host_indices(k);
  if (!randomk) {
    LEEWAY_CUDA_OR_RETURN(
        cuda::CopyToHost(host_indices.data(), indices.as<uint32_t>(), sizeof(uint32_t) * k, stream),
        "copy");
  }
  uint8_t* value_body = codec_internal::WriteSparsePrefix(
      p.codec, p.values, bucket, n, host_indices, p.seed, payload);
  return CudaStatus(
      cuda::CopyToHost(value_body, body.as<uint8_t>(), DenseBodyBytes(p.values, k, bucket), stream),
      "copy");
}

}  // namespace

bool DeviceCodecsAvailable() { return UsableGpus() > 0; }

absl::Status EncodeOnDevice(const float* gradient, float* residual, size_t n,
                            const CodecParams& params, void* stream,
                            std::vector<uint8_t>* payload) {
  if (!DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError("no usable GPU: use the CPU codecs");
  }
  absl::Status valid = ValidateParams(params);
  if (!valid.ok()) return valid;
  if (n > UINT32_MAX) return absl::InvalidArgumentError("gradient too large");
  bool finite = false;
  LEEWAY_CUDA_OR_RETURN(cuda::CheckFinite(gradient, residual, n, stream, &finite), "input check");
  if (!finite) {
    return absl::InvalidArgumentError(
        "gradient or residual holds NaN or Inf (or their sum overflows)");
  }
  if (IsSparse(params.codec)) {
    return EncodeSparseOnDevice(params, gradient, residual, nullptr, n, stream, payload);
  }
  const uint32_t param = codec_internal::DenseParam(params);
  const size_t body_bytes = DenseBodyBytes(params.codec, n, param);
  DeviceBuffer body(std::max<size_t>(1, body_bytes), stream);
  if (!body.status().ok()) return body.status();
  LEEWAY_CUDA_OR_RETURN(cuda::EncodeDense(static_cast<uint8_t>(params.codec), param, params.seed, n,
                                          gradient, residual, body.as<uint8_t>(), stream),
                        "encode");
  payload->resize(kPayloadHeaderBytes + body_bytes);
  WritePayloadHeader({params.codec, static_cast<uint32_t>(n), param}, payload->data());
  return CudaStatus(cuda::CopyToHost(payload->data() + kPayloadHeaderBytes, body.as<uint8_t>(),
                                     body_bytes, stream),
                    "copy");
}

absl::Status EncodeFormedOnDevice(float* v, size_t n, const CodecParams& params, void* stream,
                                  std::vector<uint8_t>* payload) {
  if (!DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError("no usable GPU: use the CPU codecs");
  }
  absl::Status valid = ValidateParams(params);
  if (!valid.ok()) return valid;
  if (!IsSparse(params.codec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("EncodeFormedOnDevice takes sparse codecs, not ", CodecName(params.codec)));
  }
  if (n > UINT32_MAX) return absl::InvalidArgumentError("gradient too large");
  bool finite = false;
  LEEWAY_CUDA_OR_RETURN(cuda::CheckFinite(v, nullptr, n, stream, &finite), "input check");
  if (!finite) return absl::InvalidArgumentError("v holds NaN or Inf");
  return EncodeSparseOnDevice(params, v, nullptr, v, n, stream, payload);
}

absl::Status DecodeAccumulateOnDevice(absl::Span<const uint8_t> payload, float scale,
                                      float* out, size_t n, void* stream) {
  if (!DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError("no usable GPU: use the CPU codecs");
  }
  codec_internal::ParsedPayload parsed;
  absl::Status valid = codec_internal::ParsePayload(payload, n, &parsed);
  if (!valid.ok()) return valid;
  const size_t body_bytes = payload.size() - kPayloadHeaderBytes;
  DeviceBuffer body(std::max<size_t>(1, body_bytes), stream);
  if (!body.status().ok()) return body.status();
  LEEWAY_CUDA_OR_RETURN(cuda::CopyToDevice(body.as<uint8_t>(), parsed.body, body_bytes, stream),
                        "copy");
  const PayloadHeader& h = parsed.header;
  if (!IsSparse(h.codec)) {
    LEEWAY_CUDA_OR_RETURN(cuda::DecodeDense(static_cast<uint8_t>(h.codec), h.param, n,
                                            body.as<uint8_t>(), nullptr, scale, true, out, stream),
                          "decode");
    return CudaStatus(cuda::Synchronize(stream), "decode");
  }
  const codec_internal::SparseView& view = parsed.sparse;
  const uint8_t* device_values = body.as<uint8_t>() + (view.value_body - parsed.body);
  const uint32_t* device_indices =
      reinterpret_cast<const uint32_t*>(body.as<uint8_t>() + 4);  // topk, threshold
  DeviceBuffer randomk(sizeof(uint32_t) * std::max<size_t>(1, view.k), stream);
  if (!randomk.status().ok()) return randomk.status();
  if (view.codec == CodecId::kRandomK) {
    LEEWAY_CUDA_OR_RETURN(
        cuda::RandomKIndices(view.seed, n, view.k, randomk.as<uint32_t>(), stream), "randomk");
    device_indices = randomk.as<uint32_t>();
  }
  LEEWAY_CUDA_OR_RETURN(cuda::DecodeDense(static_cast<uint8_t>(view.values), view.bucket, view.k,
                                          device_values, device_indices, scale, true, out, stream),
                        "decode");
  return CudaStatus(cuda::Synchronize(stream), "decode");
}

#else  // !LEEWAY_HAVE_CUDA

bool DeviceCodecsAvailable() { return false; }

absl::Status EncodeOnDevice(const float*, float*, size_t, const CodecParams&, void*,
                            std::vector<uint8_t>*) {
  return absl::FailedPreconditionError("built without CUDA: use the CPU codecs");
}

absl::Status EncodeFormedOnDevice(float*, size_t, const CodecParams&, void*,
                                  std::vector<uint8_t>*) {
  return absl::FailedPreconditionError("built without CUDA: use the CPU codecs");
}

absl::Status DecodeAccumulateOnDevice(absl::Span<const uint8_t>, float, float*, size_t,
                                      void*) {
  return absl::FailedPreconditionError("built without CUDA: use the CPU codecs");
}

#endif  // LEEWAY_HAVE_CUDA

}  // namespace leeway
