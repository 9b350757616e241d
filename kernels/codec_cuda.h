// The codecs on a GPU: the payloads of codec.h (byte for byte the same for
// the dense codecs, the same kept indices for the sparse ones) encoded
// from and decoded into device memory, so that a worker compresses where
// its gradients are and copies only the payload to the host.
//
// Pointers to floats are device pointers; `stream` is a cudaStream_t (as
// void*, so that callers need no CUDA headers). Calls return when their
// results are ready. Encode checks its input on the device first (NaN or
// Inf: INVALID_ARGUMENT, nothing written); DecodeAccumulate validates the
// whole payload on the host before anything reaches the device.
//
// Available where the build found nvcc and the machine has a usable GPU
// (kernels/gpu.h); elsewhere every call returns FAILED_PRECONDITION and
// callers use the CPU codecs. Thread-safe across streams.
#ifndef LEEWAY_KERNELS_CODEC_CUDA_H_
#define LEEWAY_KERNELS_CODEC_CUDA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/codec.h"

namespace leeway {

bool DeviceCodecsAvailable();

absl::Status EncodeOnDevice(const float* gradient, float* residual, size_t n,
                            const CodecParams& params, void* stream,
                            std::vector<uint8_t>* payload);

// EncodeFormed's twin (codec.h): `v` (device) holds v = g + r formed by
// the caller (a worker's momentum correction) and is left as the residual.
// Sparse codecs only; a non-finite v is refused before anything is written.
absl::Status EncodeFormedOnDevice(float* v, size_t n, const CodecParams& params, void* stream,
                                  std::vector<uint8_t>* payload);

// out[0..n) += scale * decode(payload), on the device.
absl::Status DecodeAccumulateOnDevice(absl::Span<const uint8_t> payload,
                                      float scale, float* out, size_t n,
                                      void* stream);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_CODEC_CUDA_H_
