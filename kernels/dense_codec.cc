// CPU encoders and validation of the dense codec bodies.
#include "kernels/dense_codec.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/counter_random.h"
#include "kernels/encode_guard.h"
#include "kernels/half_block.h"
#include "kernels/int8_block.h"
#include "kernels/parallel_for.h"
#include "kernels/sign_block.h"
#include "kernels/vector_clones.h"

namespace leeway {
namespace codec_internal {
namespace {

// The loops take raw restrict-qualified pointers: a byte pointer that might
// alias the floats would keep them scalar. With r, v = g + r and r becomes
// v - decoded; without, v = g.
template <typename Quantize, typename Dequantize>
inline void Encode16(size_t begin, size_t end, const float* __restrict g,
                     float* __restrict r, uint8_t* __restrict body,
                     Quantize quantize, Dequantize dequantize) {
  if (r == nullptr) {
    for (size_t i = begin; i < end; ++i) StoreLE16(body + 2 * i, quantize(g[i]));
    return;
  }
  for (size_t i = begin; i < end; ++i) {
    const float v = g[i] + r[i];
    const uint16_t h = quantize(v);
    StoreLE16(body + 2 * i, h);
    r[i] = v - dequantize(h);
  }
}

LEEWAY_VECTOR_CLONES
void EncodeElementwise(CodecId codec, size_t begin, size_t end,
                       const float* __restrict g, float* __restrict r,
                       uint8_t* __restrict body) {
  switch (codec) {
    case CodecId::kNone:
      if (r == nullptr) {
        for (size_t i = begin; i < end; ++i) StoreLE32(body + 4 * i, FloatBits(g[i]));
        return;
      }
      for (size_t i = begin; i < end; ++i) {
        StoreLE32(body + 4 * i, FloatBits(g[i] + r[i]));
        r[i] = 0.0f;
      }
      return;
    case CodecId::kFp16:
      EncodeFp16(begin, end, g, r, body);  // F16C where the CPU has it
      return;
    case CodecId::kBf16:
      Encode16(begin, end, g, r, body, FloatToBf16, Bf16ToFloat);
      return;
    default:
      return;
  }
}

}  // namespace

uint32_t DenseParam(const CodecParams& params) {
  switch (params.codec) {
    case CodecId::kInt8: return params.int8_bucket;
    case CodecId::kSign: return params.sign_bucket;
    default: return 0;
  }
}

absl::Status CheckDenseParam(CodecId codec, uint32_t param) {
  if (codec == CodecId::kInt8 || codec == CodecId::kSign) {
    const bool sign = codec == CodecId::kSign;
    if (param == 0 || param > kMaxBucket || (sign && param % 8 != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          CodecName(codec), " bucket size ", param, " out of range",
          sign ? " or not a multiple of 8" : ""));
    }
  } else if (param != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        CodecName(codec), " codec parameter must be 0, is ", param));
  }
  return absl::OkStatus();
}

size_t DenseBodyBytes(CodecId codec, size_t elements, uint32_t param) {
  switch (codec) {
    case CodecId::kNone: return 4 * elements;
    case CodecId::kFp16:
    case CodecId::kBf16: return 2 * elements;
    case CodecId::kInt8: return 4 * Buckets(elements, param) + elements;
    case CodecId::kSign: return 4 * Buckets(elements, param) + (elements + 7) / 8;
    default: return 0;
  }
}

size_t DenseGrain(CodecId codec, uint32_t param) {
  if (codec != CodecId::kInt8 && codec != CodecId::kSign) return kDenseGrain;
  return std::max<size_t>(1, kDenseGrain / param) * param;  // whole buckets
}

absl::Status EncodeDense(CodecId codec, uint32_t param, uint64_t seed, size_t n,
                         const float* g, float* r, uint8_t* body, int threads) {
  const uint32_t dither = DitherSeed(seed);
  return GuardedPass(
      n, DenseGrain(codec, param), threads, g, r,
      [&](size_t begin, size_t end) -> size_t {
        // The bucketed codecs check each bucket as they take its scale.
        switch (codec) {
          case CodecId::kInt8:
            return EncodeInt8Buckets(param, dither, n, begin, end, g, r, body);
          case CodecId::kSign:
            return EncodeSignBuckets(param, n, begin, end, g, r, body);
          default:
            return CheckedBlocks(g, r, begin, end, kGuardBlock, [&](size_t b, size_t e) {
              EncodeElementwise(codec, b, e, g, r, body);
            });
        }
      },
      [&](size_t begin, size_t end) {
        if (r == nullptr) return;  // only the payload was written
        // r held v - sent: v = r + sent, and r was v - g.
        DecodeDenseRange(codec, param, n, body, begin, end,
                         [&](size_t i, float sent) { r[i] = (r[i] + sent) - g[i]; });
      });
}

absl::Status ValidateDenseBody(CodecId codec, size_t elements, uint32_t param,
                               const uint8_t* body) {
  size_t words = 0, stride = 4;
  uint32_t exponent_mask = 0x7F800000u;
  switch (codec) {
    case CodecId::kNone: words = elements; break;
    case CodecId::kFp16: words = elements; stride = 2; exponent_mask = 0x7C00u; break;
    case CodecId::kBf16: words = elements; stride = 2; exponent_mask = 0x7F80u; break;
    case CodecId::kInt8: words = Buckets(elements, param); break;
    case CodecId::kSign: words = Buckets(elements, param); break;
    default: return absl::InvalidArgumentError("not a dense codec");
  }
  uint32_t bad = 0;  // branch-free first pass; locate only on failure
  for (size_t i = 0; i < words; ++i) {
    const uint32_t bits = stride == 4 ? LoadLE32(body + 4 * i) : LoadLE16(body + 2 * i);
    bad |= (bits & exponent_mask) == exponent_mask;
  }
  if (bad == 0) return absl::OkStatus();
  for (size_t i = 0; i < words; ++i) {
    const uint32_t bits = stride == 4 ? LoadLE32(body + 4 * i) : LoadLE16(body + 2 * i);
    if ((bits & exponent_mask) == exponent_mask) {
      return absl::InvalidArgumentError(absl::StrCat(
          CodecName(codec), " payload holds a non-finite value at word ", i));
    }
  }
  return absl::OkStatus();
}

}  // namespace codec_internal
}  // namespace leeway
