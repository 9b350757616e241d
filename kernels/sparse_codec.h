// Internal to the codec library: the sparse codecs (topk, randomk,
// threshold), each optionally with quantized values (topk+fp16, topk+int8).
//
// Body after the 16-byte payload header, little-endian:
//   topk, threshold:  u32 k | u32 index[k] (strictly ascending, < n) | values
//   randomk:          u32 k | u64 seed | values    (indices from the seed)
// `values` is a dense body (dense_codec.h) of k elements in the value codec
// (none, fp16, bf16 or int8). The header's parameter holds the value codec
// in its low byte and, for int8 values, the bucket size in the upper 24 bits.
//
// randomk without error feedback sends each kept value multiplied by its
// stratum's size (see counter_random.h), so that decode() is an unbiased
// estimate of the input. With error feedback it sends the values as they
// are: the residual carries the rest, and scaling would make it grow
// without bound (each pick would leave -(size - 1) * v behind).
// threshold keeps every |v| >= threshold, at most ceil(density * n) of them
// (the largest, when more pass). Pure functions, thread-safe.
#ifndef LEEWAY_KERNELS_SPARSE_CODEC_H_
#define LEEWAY_KERNELS_SPARSE_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/common/little_endian.h"
#include "kernels/codec.h"
#include "kernels/counter_random.h"
#include "kernels/dense_codec.h"
#include "kernels/payload.h"

namespace leeway {
namespace codec_internal {

inline bool IsSparseCodec(CodecId codec) {
  return codec == CodecId::kTopK || codec == CodecId::kRandomK ||
         codec == CodecId::kThreshold;
}

// The header parameter for a value codec (and int8 bucket).
uint32_t SparseParam(CodecId values, uint32_t bucket);

size_t SparseBodyBytes(CodecId codec, CodecId values, uint32_t bucket,
                       size_t k);

// Encodes v = g + r (v = g when r is null) into `payload` (header
// included); with r, error feedback leaves r = v - decoded. A non-finite
// v is refused before the payload is written, r as it was to within float
// rounding (encode_guard.h).
// With g null, r holds v already (formed and checked by the caller): the
// selection only reads it.
absl::Status EncodeSparse(const CodecParams& params, const float* g, float* r,
                          size_t n, std::vector<uint8_t>* payload);

// Writes header, k and indices of a topk/threshold payload with `values`
// as value codec; returns where the value body starts.
uint8_t* WriteSparsePrefix(CodecId codec, CodecId values, uint32_t bucket,
                           size_t n, absl::Span<const uint32_t> indices,
                           uint64_t seed, std::vector<uint8_t>* payload);

// A validated sparse body.
struct SparseView {
  CodecId codec = CodecId::kTopK;
  CodecId values = CodecId::kNone;
  uint32_t bucket = 0;    // int8 values only
  size_t elements = 0;    // n
  size_t k = 0;
  uint64_t seed = 0;      // randomk
  const uint8_t* indices = nullptr;  // topk, threshold
  const uint8_t* value_body = nullptr;
};

// Checks sizes, k <= n, index order and range, and value finiteness.
absl::Status ValidateSparse(const PayloadHeader& header,
                            absl::Span<const uint8_t> payload,
                            SparseView* view);

inline size_t SparseIndex(const SparseView& view, size_t j) {
  return view.codec == CodecId::kRandomK
             ? RandomKIndex(view.seed, j, view.elements, view.k)
             : LoadLE32(view.indices + 4 * j);
}

// Calls emit(index, value) for kept elements j in [begin, end).
template <typename Emit>
void DecodeSparseRange(const SparseView& view, size_t begin, size_t end,
                       Emit&& emit) {
  DecodeDenseRange(view.values, view.bucket, view.k, view.value_body, begin,
                   end, [&](size_t j, float value) {
                     emit(SparseIndex(view, j), value);
                   });
}

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_SPARSE_CODEC_H_
