// One layer's compression on a worker (DESIGN.md, "One iteration" and
// "Pulls"): per layer, for each iteration's gradient g,
//   - compressed layers (sparse codecs): DGC-style momentum correction,
//     u = m u + g, then error feedback, v = v + u, the payload encodes v and
//     v keeps what was not sent; momentum of the sent elements is cleared
//     (DGC's momentum factor masking), so the server applies plain SGD and
//     its changes stay sparse;
//   - dense lossy codecs (fp16, bf16, int8, sign): error feedback without
//     momentum (the server's optimizer keeps its own);
//   - uncompressed layers: g as it is (plus whatever residual a compressed
//     phase left, which is flushed).
// A gradient holding NaN or Inf is refused before any payload is made,
// the momentum and residual as they were (for sparse codecs to within
// float rounding: their one pass undoes what it wrote, sparse_input_pass.h).
// The layer is cut into the shard map's chunks, one payload per chunk, so
// that each chunk goes to its own server. Switching codecs between
// iterations is safe: the residual carries over. Top-k carries a
// threshold hint per chunk from one push to the next (topk_select.h), which
// spares its sample without changing a payload; for sparse codecs the
// momentum correction, error feedback's sum and the hint's gather share one
// pass over the layer, and the residual's statistics come without another.
// Not thread-safe (one training loop owns a layer); chunks could be encoded
// in parallel.
#ifndef LEEWAY_WORKER_LAYER_COMPRESSOR_H_
#define LEEWAY_WORKER_LAYER_COMPRESSOR_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/codec.h"
#include "kernels/topk_select.h"
#include "worker/layer_compression.h"

namespace leeway {

class LayerCompressor {
 public:
  // Chunks must tile [0, elements) in order. momentum in [0, 1).
  static absl::StatusOr<LayerCompressor> Create(uint64_t elements,
                                                std::vector<ChunkSlice> chunks,
                                                float momentum);

  // One payload per chunk, in chunk order.
  absl::StatusOr<std::vector<std::vector<uint8_t>>> Compress(
      absl::Span<const float> gradient, const CodecParams& params,
      CompressionStats* stats = nullptr);

  // The same into `payloads` (resized to one per chunk), calling
  // `ready(c)` as soon as chunk c's payload is complete, before chunk c+1
  // is encoded: the caller sends chunk c while the next one encodes. An
  // error after some chunks were ready leaves the others empty. Once the
  // last chunk is ready `gradient` is not read again (the push may be
  // acknowledged and the caller reuse the buffer).
  absl::Status CompressInto(absl::Span<const float> gradient, const CodecParams& params,
                            std::vector<std::vector<uint8_t>>* payloads,
                            CompressionStats* stats,
                            const std::function<void(size_t)>& ready);

  const std::vector<ChunkSlice>& chunks() const { return chunks_; }
  absl::Span<const float> residual() const { return residual_; }
  absl::Span<const float> momentum() const { return velocity_; }

 private:
  LayerCompressor(uint64_t elements, std::vector<ChunkSlice> chunks, float momentum);

  // Sums of squares: g's, and the residual's after the push when the
  // pass knew it without one of its own.
  struct Sums {
    double gradient = 0;
    double residual = 0;
    bool residual_known = false;
  };
  absl::StatusOr<Sums> CompressSparse(absl::Span<const float> gradient,
                                      const CodecParams& params,
                                      std::vector<std::vector<uint8_t>>* payloads,
                                      const std::function<void(size_t)>& ready);
  absl::StatusOr<Sums> CompressDense(absl::Span<const float> gradient,
                                     const CodecParams& params,
                                     std::vector<std::vector<uint8_t>>* payloads,
                                     const std::function<void(size_t)>& ready);

  uint64_t elements_;
  std::vector<ChunkSlice> chunks_;
  float momentum_;
  std::vector<float> velocity_;  // u: momentum, compressed layers only
  std::vector<float> residual_;  // v: what error feedback keeps
  bool velocity_cleared_ = true;  // velocity_ is all zero (as it starts)
  std::vector<TopKHint> hints_;   // top-k's, one per chunk
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_LAYER_COMPRESSOR_H_
