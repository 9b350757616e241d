#include "worker/layer_compression.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace leeway {

absl::Status ValidateLayerCompression(uint64_t elements, const std::vector<ChunkSlice>& chunks,
                                      float momentum) {
  if (!(momentum >= 0.0f && momentum < 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("momentum ", momentum, " not in [0, 1)"));
  }
  uint64_t next = 0;
  for (const ChunkSlice& c : chunks) {
    if (c.offset != next || c.elements == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk ", c.chunk, " at ", c.offset, " does not continue at ", next));
    }
    next += c.elements;
  }
  if (next != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunks cover ", next, " of ", elements, " elements"));
  }
  return absl::OkStatus();
}

CodecParams ChunkParams(const CodecParams& params, const ChunkSlice& slice) {
  CodecParams chunk_params = params;
  chunk_params.seed = params.seed * 1000003u + slice.chunk;
  return chunk_params;
}

void FillCompressionStats(double gradient_sum, double residual_sum,
                          const std::vector<std::vector<uint8_t>>& payloads,
                          CompressionStats* stats) {
  if (stats == nullptr) return;
  stats->gradient_norm = std::sqrt(gradient_sum);
  stats->payload_bytes = 0;
  for (const auto& payload : payloads) stats->payload_bytes += payload.size();
  stats->residual_ratio = 0;
  if (stats->measure_residual && stats->gradient_norm > 0) {
    stats->residual_ratio = std::sqrt(std::max(0.0, residual_sum)) / stats->gradient_norm;
  }
}

}  // namespace leeway
