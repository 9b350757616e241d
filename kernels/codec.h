// Gradient codecs: a float32 gradient in, a self-describing payload out, and
// back. The CPU implementation is the tested default.
//
// Error feedback is fused into Encode: with a residual r, the codec encodes
// v = g + r and leaves r = v - decode(payload), so that what was sent plus
// the final residual always sums to what was given (up to float rounding).
//
// Payload format (little-endian, validated by every decoder before it
// touches memory; see payload.h):
//   0 u16 magic 0x434C ("LC")   2 u8 version (1)   3 u8 codec
//   4 u32 elements              8 u32 codec parameter (int8: bucket size)
//  12 u32 reserved (0)         16 body
//
// Codecs in this slice: none (fp32), fp16, bf16 (round to nearest even,
// saturating), int8 (per-bucket scale max|v|/127, stochastic rounding from a
// seeded generator: unbiased), sign (one bit per element and one scale,
// mean |v|: EF-signSGD). Sparse codecs (topk, randomk, threshold) follow.
//
// Non-finite input: Encode refuses a gradient or residual holding NaN or
// Inf with INVALID_ARGUMENT and changes nothing, since one NaN would poison
// the residual for good. Decoders refuse payloads whose values are not
// finite.
//
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
};

const char* CodecName(CodecId codec);

struct CodecParams {
  CodecId codec = CodecId::kNone;
  uint32_t int8_bucket = 512;  // elements per scale
  uint64_t seed = 0;           // int8 stochastic rounding
};

// Payload bytes for `elements` with `params`, without encoding.
size_t CompressedSize(const CodecParams& params, size_t elements);

// Encodes `gradient` (+ `residual` when it is not empty: error feedback,
// same length, updated in place) into `payload` (resized).
absl::Status Encode(absl::Span<const float> gradient, absl::Span<float> residual,
                    const CodecParams& params, std::vector<uint8_t>* payload);

// Decodes a payload that must hold exactly out.size() elements.
absl::Status Decode(absl::Span<const uint8_t> payload, absl::Span<float> out);

// out += scale * decode(payload); out.size() must match the payload.
absl::Status DecodeAccumulate(absl::Span<const uint8_t> payload, float scale,
                              absl::Span<float> out);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_CODEC_H_
