// CPU implementation of the codecs in codec.h.
#include "kernels/codec.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "core/common/little_endian.h"
#include "kernels/half.h"
#include "kernels/payload.h"

namespace leeway {
namespace {

constexpr uint32_t kMaxInt8Bucket = 1u << 20;

size_t Buckets(size_t elements, uint32_t bucket) {
  return (elements + bucket - 1) / bucket;
}

size_t BodyBytes(CodecId codec, size_t elements, uint32_t param) {
  switch (codec) {
    case CodecId::kNone: return 4 * elements;
    case CodecId::kFp16:
    case CodecId::kBf16: return 2 * elements;
    case CodecId::kInt8: return 4 * Buckets(elements, param) + elements;
    case CodecId::kSign: return 4 + (elements + 7) / 8;
  }
  return 0;
}

// A counter-based uniform in [0, 1): the same (seed, index) always gives
// the same number, so encoding is deterministic and splittable.
inline float Uniform(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (index + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

absl::Status CheckFinite(absl::Span<const float> values, const char* what) {
  // Branch-free first pass (it vectorizes); find the index only on failure.
  uint32_t bad = 0;
  for (const float value : values) {
    bad |= (FloatBits(value) & 0x7F800000u) == 0x7F800000u;
  }
  if (bad == 0) return absl::OkStatus();
  for (size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " holds ", values[i], " at index ", i));
    }
  }
  return absl::OkStatus();
}

// Encodes v[0..n) and, when `residual` is not null (then it is v itself:
// error feedback keeps v = g + r in the residual buffer), leaves
// residual = v - decoded. Raw pointers, `body` restrict-qualified: a byte
// pointer that might alias the floats would keep the loops scalar.
void EncodeBody(CodecId codec, uint32_t param, uint64_t seed, size_t n,
                const float* values, float* residual,
                uint8_t* __restrict body) {
  const bool feedback = residual != nullptr;
  const auto v = [values](size_t i) { return values[i]; };
  switch (codec) {
    case CodecId::kNone:
      for (size_t i = 0; i < n; ++i) {
        const float x = v(i);
        StoreLE32(body + 4 * i, FloatBits(x));
        if (feedback) residual[i] = 0.0f;
      }
      return;
    case CodecId::kFp16:
      for (size_t i = 0; i < n; ++i) {
        const float x = v(i);
        const uint16_t h = FloatToFp16(x);
        StoreLE16(body + 2 * i, h);
        if (feedback) residual[i] = x - Fp16ToFloat(h);
      }
      return;
    case CodecId::kBf16:
      for (size_t i = 0; i < n; ++i) {
        const float x = v(i);
        const uint16_t h = FloatToBf16(x);
        StoreLE16(body + 2 * i, h);
        if (feedback) residual[i] = x - Bf16ToFloat(h);
      }
      return;
    case CodecId::kInt8: {
      uint8_t* scales = body;
      auto* q = reinterpret_cast<int8_t*>(body + 4 * Buckets(n, param));
      for (size_t start = 0, b = 0; start < n; start += param, ++b) {
        const size_t end = std::min(n, start + param);
        float max_abs = 0.0f;
        for (size_t i = start; i < end; ++i) max_abs = std::max(max_abs, std::fabs(v(i)));
        const float scale = max_abs / 127.0f;
        StoreLE32(scales + 4 * b, FloatBits(scale));
        const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
        for (size_t i = start; i < end; ++i) {
          const float x = v(i);
          // Stochastic rounding: floor(x/scale + u) is unbiased. The +128
          // keeps the argument positive, where truncation is floor (and
          // needs no libm call).
          const float shifted = x * inverse + Uniform(seed, i) + 128.0f;
          float level = static_cast<float>(static_cast<int>(shifted) - 128);
          level = std::min(127.0f, std::max(-127.0f, level));
          q[i] = static_cast<int8_t>(level);
          if (feedback) residual[i] = x - level * scale;
        }
      }
      return;
    }
    case CodecId::kSign: {
      double sum_abs = 0.0;
      for (size_t i = 0; i < n; ++i) sum_abs += std::fabs(v(i));
      const float scale = n > 0 ? static_cast<float>(sum_abs / n) : 0.0f;
      StoreLE32(body, FloatBits(scale));
      uint8_t* bits = body + 4;
      std::memset(bits, 0, (n + 7) / 8);
      for (size_t i = 0; i < n; ++i) {
        const float x = v(i);
        const bool negative = x < 0.0f;
        bits[i / 8] |= static_cast<uint8_t>(uint32_t{negative} << (i % 8));
        if (feedback) residual[i] = x - (negative ? -scale : scale);
      }
      return;
    }
  }
}

// Checks everything a payload body can get wrong, before any output is
// touched: lengths, and that every value it decodes to is finite.
absl::Status ValidatePayload(absl::Span<const uint8_t> payload, size_t elements,
                             PayloadHeader* header) {
  absl::StatusOr<PayloadHeader> h = ReadPayloadHeader(payload);
  if (!h.ok()) return h.status();
  if (h->elements != elements) {
    return absl::InvalidArgumentError(absl::StrCat(
        "payload holds ", h->elements, " elements, expected ", elements));
  }
  const bool int8 = h->codec == CodecId::kInt8;
  if (int8 && (h->param == 0 || h->param > kMaxInt8Bucket)) {
    return absl::InvalidArgumentError(
        absl::StrCat("int8 bucket size ", h->param, " out of range"));
  }
  if (!int8 && h->param != 0) {
    return absl::InvalidArgumentError("codec parameter must be 0");
  }
  const size_t want = kPayloadHeaderBytes + BodyBytes(h->codec, elements, h->param);
  if (payload.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        CodecName(h->codec), " payload is ", payload.size(), " bytes, want ",
        want));
  }
  const uint8_t* body = payload.data() + kPayloadHeaderBytes;
  size_t words = 0, stride = 4;
  uint32_t exponent_mask = 0x7F800000u;
  switch (h->codec) {
    case CodecId::kNone: words = elements; break;
    case CodecId::kFp16: words = elements; stride = 2; exponent_mask = 0x7C00u; break;
    case CodecId::kBf16: words = elements; stride = 2; exponent_mask = 0x7F80u; break;
    case CodecId::kInt8: words = Buckets(elements, h->param); break;
    case CodecId::kSign: words = 1; break;
  }
  for (size_t i = 0; i < words; ++i) {
    const uint32_t bits = stride == 4 ? LoadLE32(body + 4 * i)
                                      : LoadLE16(body + 2 * i);
    if ((bits & exponent_mask) == exponent_mask) {
      return absl::InvalidArgumentError(absl::StrCat(
          CodecName(h->codec), " payload holds a non-finite value at ", i));
    }
  }
  *header = *h;
  return absl::OkStatus();
}

// Calls emit(i, value) for every element of a validated payload.
template <typename Emit>
void DecodeBody(const PayloadHeader& h, const uint8_t* body, Emit emit) {
  const size_t n = h.elements;
  switch (h.codec) {
    case CodecId::kNone:
      for (size_t i = 0; i < n; ++i) emit(i, BitsFloat(LoadLE32(body + 4 * i)));
      return;
    case CodecId::kFp16:
      for (size_t i = 0; i < n; ++i) emit(i, Fp16ToFloat(LoadLE16(body + 2 * i)));
      return;
    case CodecId::kBf16:
      for (size_t i = 0; i < n; ++i) emit(i, Bf16ToFloat(LoadLE16(body + 2 * i)));
      return;
    case CodecId::kInt8: {
      const auto* q =
          reinterpret_cast<const int8_t*>(body + 4 * Buckets(n, h.param));
      for (size_t start = 0, b = 0; start < n; start += h.param, ++b) {
        const float scale = BitsFloat(LoadLE32(body + 4 * b));
        const size_t end = std::min<size_t>(n, start + h.param);
        for (size_t i = start; i < end; ++i) {
          emit(i, static_cast<float>(q[i]) * scale);
        }
      }
      return;
    }
    case CodecId::kSign: {
      const float scale = BitsFloat(LoadLE32(body));
      const uint8_t* bits = body + 4;
      for (size_t i = 0; i < n; ++i) {
        emit(i, (bits[i / 8] >> (i % 8)) & 1u ? -scale : scale);
      }
      return;
    }
  }
}

}  // namespace

const char* CodecName(CodecId codec) {
  switch (codec) {
    case CodecId::kNone: return "none";
    case CodecId::kFp16: return "fp16";
    case CodecId::kBf16: return "bf16";
    case CodecId::kInt8: return "int8";
    case CodecId::kSign: return "sign";
  }
  return "unknown";
}

size_t CompressedSize(const CodecParams& params, size_t elements) {
  const uint32_t param = params.codec == CodecId::kInt8 ? params.int8_bucket : 0;
  return kPayloadHeaderBytes + BodyBytes(params.codec, elements, param);
}

absl::Status Encode(absl::Span<const float> gradient, absl::Span<float> residual,
                    const CodecParams& params, std::vector<uint8_t>* payload) {
  const size_t n = gradient.size();
  if (n > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError("gradient too large for one payload");
  }
  if (!residual.empty() && residual.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "residual has ", residual.size(), " elements, gradient ", n));
  }
  if (static_cast<uint8_t>(params.codec) > static_cast<uint8_t>(CodecId::kSign)) {
    return absl::InvalidArgumentError("unknown codec");
  }
  const bool int8 = params.codec == CodecId::kInt8;
  if (int8 && (params.int8_bucket == 0 || params.int8_bucket > kMaxInt8Bucket)) {
    return absl::InvalidArgumentError("int8 bucket size out of range");
  }
  absl::Status finite = CheckFinite(gradient, "gradient");
  if (finite.ok()) finite = CheckFinite(residual, "residual");
  if (!finite.ok()) return finite;

  const uint32_t param = int8 ? params.int8_bucket : 0;
  payload->resize(CompressedSize(params, n));
  WritePayloadHeader({params.codec, static_cast<uint32_t>(n), param},
                     payload->data());
  uint8_t* body = payload->data() + kPayloadHeaderBytes;
  if (residual.empty()) {
    EncodeBody(params.codec, param, params.seed, n, gradient.data(), nullptr,
               body);
  } else {
    // v = g + r, kept in the residual buffer, then replaced by v - sent.
    float* r = residual.data();
    const float* g = gradient.data();
    for (size_t i = 0; i < n; ++i) r[i] += g[i];
    EncodeBody(params.codec, param, params.seed, n, r, r, body);
  }
  return absl::OkStatus();
}

absl::Status Decode(absl::Span<const uint8_t> payload, absl::Span<float> out) {
  PayloadHeader h;
  absl::Status valid = ValidatePayload(payload, out.size(), &h);
  if (!valid.ok()) return valid;
  DecodeBody(h, payload.data() + kPayloadHeaderBytes,
             [&](size_t i, float v) { out[i] = v; });
  return absl::OkStatus();
}

absl::Status DecodeAccumulate(absl::Span<const uint8_t> payload, float scale,
                              absl::Span<float> out) {
  PayloadHeader h;
  absl::Status valid = ValidatePayload(payload, out.size(), &h);
  if (!valid.ok()) return valid;
  DecodeBody(h, payload.data() + kPayloadHeaderBytes,
             [&](size_t i, float v) { out[i] += scale * v; });
  return absl::OkStatus();
}

}  // namespace leeway
