#include "worker/layer_compressor.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "worker/gradient_pass.h"

namespace leeway {

absl::StatusOr<LayerCompressor> LayerCompressor::Create(uint64_t elements,
                                                        std::vector<ChunkSlice> chunks,
                                                        float momentum) {
  if (!(momentum >= 0.0f && momentum < 1.0f)) {
    return absl::InvalidArgumentError(absl::StrCat("momentum ", momentum, " not in [0, 1)"));
  }
  uint64_t next = 0;
  for (const ChunkSlice& c : chunks) {
    if (c.offset != next || c.elements == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "chunk ", c.chunk, " at ", c.offset, " does not continue at ", next));
    }
    next += c.elements;
  }
  if (next != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunks cover ", next, " of ", elements, " elements"));
  }
  return LayerCompressor(elements, std::move(chunks), momentum);
}

LayerCompressor::LayerCompressor(uint64_t elements, std::vector<ChunkSlice> chunks,
                                 float momentum)
    : elements_(elements),
      chunks_(std::move(chunks)),
      momentum_(momentum),
      velocity_(elements, 0.0f),
      residual_(elements, 0.0f),
      hints_(chunks_.size()) {}

absl::StatusOr<std::vector<std::vector<uint8_t>>> LayerCompressor::Compress(
    absl::Span<const float> gradient, const CodecParams& params, CompressionStats* stats) {
  std::vector<std::vector<uint8_t>> payloads;
  absl::Status status = CompressInto(gradient, params, &payloads, stats, nullptr);
  if (!status.ok()) return status;
  return payloads;
}

absl::Status LayerCompressor::CompressInto(absl::Span<const float> gradient,
                                           const CodecParams& params,
                                           std::vector<std::vector<uint8_t>>* payloads,
                                           CompressionStats* stats,
                                           const std::function<void(size_t)>& ready) {
  if (gradient.size() != elements_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient has ", gradient.size(), " elements, the layer ", elements_));
  }
  // The norm comes from this first pass: once the last chunk is ready the
  // caller may reuse or free `gradient` (its push ticket can complete). For
  // sparse codecs the same pass forms u = m u + g into the spare buffer
  // (the velocity changes only once every chunk is encoded).
  const bool sparse = IsSparse(params.codec);
  if (sparse) corrected_.resize(elements_);
  absl::StatusOr<double> sum_of_squares =
      sparse ? MomentumCorrect(momentum_, velocity_, gradient, absl::MakeSpan(corrected_))
             : CheckedSumOfSquares(gradient);
  if (!sum_of_squares.ok()) return sum_of_squares.status();
  payloads->assign(chunks_.size(), {});
  const absl::Span<const float> input = sparse ? absl::MakeConstSpan(corrected_) : gradient;
  uint64_t bytes = 0;
  std::vector<uint32_t> sent;
  std::vector<float> values;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    const auto part = input.subspan(slice.offset, slice.elements);
    // Every codec runs with the residual: uncompressed pushes flush what a
    // compressed phase left (and send g exactly when it is zero).
    absl::Span<float> residual = absl::MakeSpan(residual_).subspan(slice.offset, slice.elements);
    CodecParams chunk_params = params;
    chunk_params.seed = params.seed * 1000003u + slice.chunk;  // distinct per chunk
    chunk_params.topk_hint = &hints_[c];
    std::vector<uint8_t>& payload = (*payloads)[c];
    absl::Status encoded = Encode(part, residual, chunk_params, &payload);
    if (!encoded.ok()) return encoded;
    bytes += payload.size();
    if (sparse) {
      // Momentum factor masking: the sent elements' momentum starts over.
      absl::Status decoded = DecodePairs(payload, slice.elements, &sent, &values);
      if (!decoded.ok()) return decoded;
      for (uint32_t i : sent) corrected_[slice.offset + i] = 0.0f;
    }
    if (ready) ready(c);
  }
  if (sparse) {
    velocity_.swap(corrected_);  // the old velocity is the next spare buffer
  } else if (!velocity_cleared_) {
    // Without the sparse phase's correction its momentum would go stale.
    std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  }
  velocity_cleared_ = !sparse;
  if (stats != nullptr) {
    stats->gradient_norm = std::sqrt(*sum_of_squares);
    stats->residual_ratio = stats->measure_residual && stats->gradient_norm > 0
                                ? std::sqrt(SumOfSquares(residual_)) / stats->gradient_norm
                                : 0.0;
    stats->payload_bytes = bytes;
  }
  return absl::OkStatus();
}

}  // namespace leeway
