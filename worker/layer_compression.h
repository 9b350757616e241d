// What a layer's compression on a worker shares between host memory
// (layer_compressor.h) and device memory (device_layer_compressor.h): the
// layer's chunks, the statistics one push measures, the checks on a
// layer's set-up, each chunk's codec parameters, and the statistics'
// arithmetic, so that both produce the same payloads and figures.
#ifndef LEEWAY_WORKER_LAYER_COMPRESSION_H_
#define LEEWAY_WORKER_LAYER_COMPRESSION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "kernels/codec.h"

namespace leeway {

struct ChunkSlice {
  uint32_t chunk = 0;
  uint64_t offset = 0;
  uint32_t elements = 0;
};

// What one push measured, for the coordinator's controller.
struct CompressionStats {
  // In: whether to measure residual_ratio, a pass over the whole residual
  // (the worker asks only on clocks whose statistics it reports).
  bool measure_residual = true;
  // Out.
  double gradient_norm = 0;   // |g|
  double residual_ratio = 0;  // |v after| / |g|; 0 when not measured
  uint64_t payload_bytes = 0;
};

// Chunks must tile [0, elements) in order; momentum in [0, 1).
absl::Status ValidateLayerCompression(uint64_t elements, const std::vector<ChunkSlice>& chunks,
                                      float momentum);

// One chunk's parameters: the seed made distinct per chunk (stochastic
// rounding, sampling, randomk).
CodecParams ChunkParams(const CodecParams& params, const ChunkSlice& slice);

// Fills `stats` (when not null) from the sums of squares of g and of the
// residual after the push (the latter used only when it was measured).
void FillCompressionStats(double gradient_sum, double residual_sum,
                          const std::vector<std::vector<uint8_t>>& payloads,
                          CompressionStats* stats);

}  // namespace leeway

#endif  // LEEWAY_WORKER_LAYER_COMPRESSION_H_
