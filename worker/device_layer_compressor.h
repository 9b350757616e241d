// One layer's compression on a worker whose gradients are in GPU memory:
// LayerCompressor's contract (layer_compressor.h: DGC momentum correction
// and error feedback for sparse codecs, error feedback for dense lossy
// ones, one payload per chunk, plans switched between pushes) with the
// velocity and the residual kept on the device, so that only the payloads
// cross to the host. For the same gradients and plans the payloads are
// LayerCompressor's (sparse: the same indices and values; dense: the same
// bytes, sign's scales to float rounding) and so are velocity and residual
// to float rounding: the GPU tests check it on shared vectors.
//
// The momentum correction's inputs are checked on the device before
// anything is written: a gradient holding NaN or Inf (or one whose
// corrected sum overflows) is refused with INVALID_ARGUMENT naming the
// first bad index, velocity and residual exactly as they were.
//
// Kernels run on the caller's `stream` (a cudaStream_t as void*), after
// whatever the caller queued there before (the backward pass that wrote
// the gradient); the call returns when the payloads are on the host.
// Available in CUDA builds on a machine with a usable GPU; elsewhere
// Create fails with FAILED_PRECONDITION. Not thread-safe (one push thread
// owns a layer).
#ifndef LEEWAY_WORKER_DEVICE_LAYER_COMPRESSOR_H_
#define LEEWAY_WORKER_DEVICE_LAYER_COMPRESSOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/codec.h"
#include "kernels/device_memory.h"
#include "worker/layer_compression.h"

namespace leeway {

class DeviceLayerCompressor {
 public:
  // Allocates velocity and residual (zero) on the device.
  static absl::StatusOr<std::unique_ptr<DeviceLayerCompressor>> Create(
      uint64_t elements, std::vector<ChunkSlice> chunks, float momentum);

  // LayerCompressor::CompressInto with `gradient` a device pointer to the
  // layer's elements: one payload per chunk into `payloads`, `ready(c)` as
  // soon as chunk c's is on the host. Once the last chunk is ready the
  // gradient is not read again.
  absl::Status CompressInto(const float* gradient, void* stream, const CodecParams& params,
                            std::vector<std::vector<uint8_t>>* payloads, CompressionStats* stats,
                            const std::function<void(size_t)>& ready);

  // Host copies of the state, for tests and checks.
  absl::StatusOr<std::vector<float>> Residual(void* stream) const;
  absl::StatusOr<std::vector<float>> Momentum(void* stream) const;

 private:
  DeviceLayerCompressor(uint64_t elements, std::vector<ChunkSlice> chunks, float momentum);

  // Sums of squares of g and of the residual after the push (when asked).
  struct Sums {
    double gradient = 0;
    double residual = 0;
  };
  absl::StatusOr<Sums> CompressSparse(const float* gradient, void* stream,
                                      const CodecParams& params,
                                      std::vector<std::vector<uint8_t>>* payloads,
                                      const std::function<void(size_t)>& ready);
  absl::StatusOr<Sums> CompressDense(const float* gradient, void* stream, const CodecParams& params,
                                     std::vector<std::vector<uint8_t>>* payloads,
                                     const std::function<void(size_t)>& ready);
  absl::StatusOr<double> ResidualSumOfSquares(void* stream) const;

  uint64_t elements_;
  std::vector<ChunkSlice> chunks_;
  float momentum_;
  DeviceBuffer velocity_;  // u, compressed layers only
  DeviceBuffer residual_;  // v
  bool velocity_cleared_ = true;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_DEVICE_LAYER_COMPRESSOR_H_
