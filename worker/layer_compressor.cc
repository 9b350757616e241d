#include "worker/layer_compressor.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/indexed_prefetch.h"
#include "worker/gradient_pass.h"
#include "worker/sparse_input_pass.h"

namespace leeway {

absl::StatusOr<LayerCompressor> LayerCompressor::Create(uint64_t elements,
                                                        std::vector<ChunkSlice> chunks,
                                                        float momentum) {
  absl::Status valid = ValidateLayerCompression(elements, chunks, momentum);
  if (!valid.ok()) return valid;
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
  absl::Status valid = ValidateParams(params);
  if (!valid.ok()) return valid;
  payloads->assign(chunks_.size(), {});
  absl::StatusOr<Sums> sums = IsSparse(params.codec)
                                  ? CompressSparse(gradient, params, payloads, ready)
                                  : CompressDense(gradient, params, payloads, ready);
  if (!sums.ok()) return sums.status();
  if (stats != nullptr) {
    const bool measure = stats->measure_residual && sums->gradient > 0;
    FillCompressionStats(
        sums->gradient, !measure || sums->residual_known ? sums->residual : SumOfSquares(residual_),
        *payloads, stats);
  }
  return absl::OkStatus();
}

absl::StatusOr<LayerCompressor::Sums> LayerCompressor::CompressSparse(
    absl::Span<const float> gradient, const CodecParams& params,
    std::vector<std::vector<uint8_t>>* payloads, const std::function<void(size_t)>& ready) {
  // One pass forms u into the velocity and v into the residual, with the
  // top-k gathers whose hints are due (sparse_input_pass.h); nothing is
  // sent before the whole gradient has been checked.
  std::vector<HintGather> gathers;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    const size_t k = SparseKeep(params.density, slice.elements);
    if (params.codec == CodecId::kTopK && TopKHintDue(hints_[c], slice.elements, k)) {
      gathers.push_back(
          {slice.offset, slice.offset + slice.elements, TopKHintCap(k), &hints_[c]});
    }
  }
  absl::StatusOr<SparseInputSums> formed =
      FormSparseInput(momentum_, absl::MakeSpan(velocity_), gradient,
                      absl::MakeSpan(residual_), gathers);
  if (!formed.ok()) return formed.status();
  velocity_cleared_ = momentum_ == 0;  // the pass wrote u into it
  // The residual's sum of squares once the payloads are out: v's, less
  // what each sent element took away (v_i^2 becomes (v_i - sent_i)^2).
  Sums sums{formed->gradient, formed->v, true};
  std::vector<uint32_t> sent;
  std::vector<float> values;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    absl::Span<float> v = absl::MakeSpan(residual_).subspan(slice.offset, slice.elements);
    CodecParams chunk_params = ChunkParams(params, slice);
    chunk_params.topk_hint = &hints_[c];
    std::vector<uint8_t>& payload = (*payloads)[c];
    absl::Status encoded = EncodeFormed(v, chunk_params, &payload);
    if (encoded.ok()) encoded = DecodePairs(payload, slice.elements, &sent, &values);
    if (!encoded.ok()) return encoded;
    for (size_t j = 0; j < sent.size(); ++j) {
      const double left = v[sent[j]];
      const double before = left + values[j];
      sums.residual += left * left - before * before;
      // Momentum factor masking: the sent elements' momentum starts over.
      if (momentum_ > 0) {
        PrefetchIndexed(velocity_.data(), slice.offset, sent.data(), j, sent.size());
        velocity_[slice.offset + sent[j]] = 0.0f;
      }
    }
    if (ready) ready(c);
  }
  return sums;
}

absl::StatusOr<LayerCompressor::Sums> LayerCompressor::CompressDense(
    absl::Span<const float> gradient, const CodecParams& params,
    std::vector<std::vector<uint8_t>>* payloads, const std::function<void(size_t)>& ready) {
  // The norm comes from this first pass: once the last chunk is ready the
  // caller may reuse or free `gradient` (its push ticket can complete).
  absl::StatusOr<double> sum_of_squares = CheckedSumOfSquares(gradient);
  if (!sum_of_squares.ok()) return sum_of_squares.status();
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const ChunkSlice& slice = chunks_[c];
    // Every codec runs with the residual: uncompressed pushes flush what a
    // compressed phase left (and send g exactly when it is zero).
    absl::Span<float> residual = absl::MakeSpan(residual_).subspan(slice.offset, slice.elements);
    absl::Status encoded = Encode(gradient.subspan(slice.offset, slice.elements), residual,
                                  ChunkParams(params, slice), &(*payloads)[c]);
    if (!encoded.ok()) return encoded;
    if (ready) ready(c);
  }
  // Without the sparse phase's correction its momentum would go stale.
  if (!velocity_cleared_) std::fill(velocity_.begin(), velocity_.end(), 0.0f);
  velocity_cleared_ = true;
  return Sums{*sum_of_squares, 0.0, false};
}

}  // namespace leeway
