// Gradient codecs: a float32 gradient in, a self-describing payload out, and
// back. The CPU implementation is the tested default; kernels/cuda/ holds
// the CUDA twin (codec_cuda.h) with the same payloads.
//
// Error feedback is fused into Encode: with a residual r, the codec encodes
// v = g + r and leaves r = v - decode(payload), so that what was sent plus
// the final residual always sums to what was given (up to float rounding).
//
// Payload format (little-endian, validated by every decoder before it
// touches memory):
//   0 u16 magic 0x434C ("LC")   2 u8 version (1)   3 u8 codec
//   4 u32 elements              8 u32 codec parameter
//  12 u32 reserved (0)         16 body
//
// Dense codecs (dense_codec.h): none (fp32), fp16, bf16 (round to nearest
// even, saturating), int8 (per-bucket scale max|v|/127, stochastic rounding
// from a seeded generator: unbiased; parameter = bucket size), sign (one
// bit per element and a scale per bucket, mean |v| over it: EF-signSGD
// with blockwise scales; parameter = bucket size, a multiple of 8).
// Sparse codecs (sparse_codec.h): topk (the exact k largest magnitudes, see
// topk_select.h), randomk (stratified, seeded: no indices on the wire;
// unbiased without error feedback), threshold (|v| >= t, capped at the density); their values may
// be quantized (values = fp16, bf16 or int8: topk+fp16, topk+int8).
//
// Non-finite input: Encode refuses a gradient or residual holding NaN or
// Inf (or whose sum overflows) with INVALID_ARGUMENT, since one NaN would
// poison the residual for good; the residual is then as it was, to within
// float rounding (encode_guard.h: the check rides in the encode's one pass
// over memory, and a refusal undoes what was written). Decoders refuse
// payloads whose values are not finite.
//
// Threads: large tensors are processed in blocks on the shared kernel pool
// (parallel_for.h); `threads` = 1 keeps a call on the caller's thread, 0
// uses the whole pool. Results do not depend on the thread count.
// Thread-safety: pure functions of their arguments.
#ifndef LEEWAY_KERNELS_CODEC_H_
#define LEEWAY_KERNELS_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

// Same numbers as leeway.v1.Codec and the wire header's codec byte.
enum class CodecId : uint8_t {
  kNone = 0,
  kFp16 = 1,
  kBf16 = 2,
  kInt8 = 3,
  kSign = 4,
  kTopK = 5,
  kRandomK = 6,
  kThreshold = 7,
};
constexpr uint8_t kMaxCodecId = 7;

const char* CodecName(CodecId codec);
bool IsSparse(CodecId codec);

struct TopKHint;  // topk_select.h

struct CodecParams {
  CodecId codec = CodecId::kNone;
  uint32_t int8_bucket = 512;  // elements per scale (int8, and int8 values)
  uint32_t sign_bucket = 2048; // elements per scale (sign), a multiple of 8
  uint64_t seed = 0;           // stochastic rounding, sampling, randomk
  float density = 0.01f;       // sparse: keep ceil(density * n), in [1, n]
  float threshold = 0.0f;      // threshold: keep |v| >= threshold
  CodecId values = CodecId::kNone;  // sparse: none, fp16, bf16 or int8
  int threads = 0;             // 0: the kernel pool; 1: the caller only
  // topk on the CPU: carried from one encode of a tensor to the next
  // (topk_select.h; read and updated, never changes the payload); may be
  // null. The CUDA twin samples on the device and ignores it.
  TopKHint* topk_hint = nullptr;
};

// Elements a sparse codec with this density keeps of n: ceil(density * n)
// within [1, n] (0 when n is 0).
size_t SparseKeep(float density, size_t n);

// Checks that params describe a codec this library can encode.
absl::Status ValidateParams(const CodecParams& params);

// Payload bytes for `elements` with `params`, without encoding. For
// threshold, the most it can take (the density cap).
size_t CompressedSize(const CodecParams& params, size_t elements);

// Encodes `gradient` (+ `residual` when it is not empty: error feedback,
// same length, updated in place) into `payload` (resized).
absl::Status Encode(absl::Span<const float> gradient, absl::Span<float> residual,
                    const CodecParams& params, std::vector<uint8_t>* payload);

// Encode for a caller that formed v = g + r in a pass of its own (a
// worker's momentum correction, layer_compressor.h): `v` holds v on entry
// and is left as the residual Encode leaves. Sparse codecs only; the
// selection still refuses a non-finite v.
absl::Status EncodeFormed(absl::Span<float> v, const CodecParams& params,
                          std::vector<uint8_t>* payload);

// Validates a payload of `elements` elements in full, as every decoder
// does before it touches its output.
absl::Status ValidatePayload(absl::Span<const uint8_t> payload, size_t elements);

// Decodes a payload that must hold exactly out.size() elements.
absl::Status Decode(absl::Span<const uint8_t> payload, absl::Span<float> out,
                    int threads = 0);

// out += scale * decode(payload); out.size() must match the payload. For a
// sparse payload only the kept elements are read and written: O(k).
absl::Status DecodeAccumulate(absl::Span<const uint8_t> payload, float scale,
                              absl::Span<float> out, int threads = 0);

// The (index, value) pairs a payload of `elements` elements carries, indices
// ascending: the kept ones for sparse codecs, all of them for dense ones.
// For servers that apply sparse updates lazily.
absl::Status DecodePairs(absl::Span<const uint8_t> payload, size_t elements,
                         std::vector<uint32_t>* indices,
                         std::vector<float>* values);

// Writes a sparse payload (topk layout, fp32 values) carrying exactly these
// pairs: indices strictly ascending and < elements. Servers use it for
// delta pull replies, which DecodePairs reads back.
absl::Status EncodePairs(size_t elements, absl::Span<const uint32_t> indices,
                         absl::Span<const float> values,
                         std::vector<uint8_t>* payload);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_CODEC_H_
