// CPU encoders and validation of the dense codec bodies.
#include "kernels/dense_codec.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/counter_random.h"
#include "kernels/half_block.h"
#include "kernels/parallel_for.h"
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

// Buckets [begin, end) of int8 (begin bucket-aligned). Two loops per
// bucket, the second reading what the first brought into cache.
LEEWAY_VECTOR_CLONES
void EncodeInt8(uint32_t bucket, uint32_t seed, size_t n, size_t begin,
                size_t end, const float* __restrict g, float* __restrict r,
                uint8_t* __restrict body) {
  uint8_t* scales = body;
  auto* __restrict q = reinterpret_cast<int8_t*>(body + 4 * Int8Buckets(n, bucket));
  for (size_t start = begin; start < end; start += bucket) {
    const size_t stop = std::min(end, start + bucket);
    uint32_t max_bits = 0;  // |v| as integers: an integer max vectorizes
    for (size_t i = start; i < stop; ++i) {
      const float v = r != nullptr ? g[i] + r[i] : g[i];
      max_bits = std::max(max_bits, FloatBits(v) & 0x7FFFFFFFu);
    }
    const float scale = BitsFloat(max_bits) / 127.0f;
    StoreLE32(scales + 4 * (start / bucket), FloatBits(scale));
    const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
    for (size_t i = start; i < stop; ++i) {
      const float v = r != nullptr ? g[i] + r[i] : g[i];
      // Stochastic rounding: floor(v/scale + u) is unbiased. The +128 keeps
      // the argument positive, where truncation is floor (no libm call).
      const float shifted =
          v * inverse + DitherUniform(seed, static_cast<uint32_t>(i)) + 128.0f;
      float level = static_cast<float>(static_cast<int>(shifted) - 128);
      level = std::min(127.0f, std::max(-127.0f, level));
      q[i] = static_cast<int8_t>(level);
      if (r != nullptr) r[i] = v - level * scale;
    }
  }
}

// sign: one bit each against a scale computed beforehand; [begin, end)
// starts on a byte boundary.
LEEWAY_VECTOR_CLONES
void EncodeSign(float scale, size_t begin, size_t end, const float* __restrict g,
                float* __restrict r, uint8_t* __restrict bits) {
  std::memset(bits + begin / 8, 0, (end - begin + 7) / 8);
  for (size_t i = begin; i < end; ++i) {
    const float v = r != nullptr ? g[i] + r[i] : g[i];
    const bool negative = v < 0.0f;
    bits[i / 8] |= static_cast<uint8_t>(uint32_t{negative} << (i % 8));
    if (r != nullptr) r[i] = v - (negative ? -scale : scale);
  }
}

}  // namespace

absl::Status CheckDenseParam(CodecId codec, uint32_t param) {
  if (codec == CodecId::kInt8) {
    if (param == 0 || param > kMaxInt8Bucket) {
      return absl::InvalidArgumentError(
          absl::StrCat("int8 bucket size ", param, " out of range"));
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
    case CodecId::kInt8: return 4 * Int8Buckets(elements, param) + elements;
    case CodecId::kSign: return 4 + (elements + 7) / 8;
    default: return 0;
  }
}

size_t DenseGrain(CodecId codec, uint32_t param) {
  if (codec != CodecId::kInt8) return kDenseGrain;
  return std::max<size_t>(1, kDenseGrain / param) * param;
}

void EncodeDense(CodecId codec, uint32_t param, uint64_t seed, size_t n,
                 const float* g, float* r, float sign_scale, uint8_t* body,
                 int threads) {
  if (codec == CodecId::kSign) StoreLE32(body, FloatBits(sign_scale));
  const uint32_t dither = DitherSeed(seed);
  ParallelFor(n, DenseGrain(codec, param), threads, [&](size_t begin, size_t end) {
    switch (codec) {
      case CodecId::kInt8:
        EncodeInt8(param, dither, n, begin, end, g, r, body);
        return;
      case CodecId::kSign:
        EncodeSign(sign_scale, begin, end, g, r, body + 4);
        return;
      default:
        EncodeElementwise(codec, begin, end, g, r, body);
    }
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
    case CodecId::kInt8: words = Int8Buckets(elements, param); break;
    case CodecId::kSign: words = 1; break;
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
