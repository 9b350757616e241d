// Internal to the codec library: the bodies of the dense codecs (none,
// fp16, bf16, int8, sign): sizes, encoding with fused error feedback,
// validation, and decoding over element ranges. The sparse codecs reuse
// them for their value arrays (topk+fp16 is a top-k selection whose values
// are an fp16 body). Pure functions, thread-safe; callers validate sizes.
#ifndef LEEWAY_KERNELS_DENSE_CODEC_H_
#define LEEWAY_KERNELS_DENSE_CODEC_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "core/common/little_endian.h"
#include "kernels/codec.h"
#include "kernels/half.h"
#include "kernels/half_block.h"
#include "kernels/sign_block.h"

namespace leeway {
namespace codec_internal {

// The most elements one int8 or sign scale may cover.
constexpr uint32_t kMaxBucket = 1u << 20;
// Elements per parallel block of the dense loops.
constexpr size_t kDenseGrain = size_t{1} << 16;

inline bool IsDense(CodecId codec) {
  return static_cast<uint8_t>(codec) <= static_cast<uint8_t>(CodecId::kSign);
}

inline size_t Buckets(size_t elements, uint32_t bucket) {
  return (elements + bucket - 1) / bucket;
}

// The parameter a dense body needs: the int8 or sign bucket, else 0.
uint32_t DenseParam(const CodecParams& params);
absl::Status CheckDenseParam(CodecId codec, uint32_t param);

size_t DenseBodyBytes(CodecId codec, size_t elements, uint32_t param);

// Encodes v = g + r (v = g when r is null) of n elements into `body`;
// with r, error feedback leaves r = v - decoded. One pass over memory,
// guarded (encode_guard.h: a non-finite v is refused and r restored),
// parallel over blocks on up to `threads` threads.
absl::Status EncodeDense(CodecId codec, uint32_t param, uint64_t seed, size_t n,
                         const float* g, float* r, uint8_t* body, int threads);

// Checks that every value a body of exactly the right size decodes to is
// finite (scales included).
absl::Status ValidateDenseBody(CodecId codec, size_t elements, uint32_t param,
                               const uint8_t* body);

// Calls emit(i, value) for i in [begin, end) of a validated body.
template <typename Emit>
void DecodeDenseRange(CodecId codec, uint32_t param, size_t n,
                      const uint8_t* body, size_t begin, size_t end,
                      Emit&& emit) {
  switch (codec) {
    case CodecId::kNone:
      for (size_t i = begin; i < end; ++i) emit(i, BitsFloat(LoadLE32(body + 4 * i)));
      return;
    case CodecId::kFp16: {
      float block[256];  // converted eight at a time where the CPU can
      for (size_t start = begin; start < end; start += 256) {
        const size_t stop = std::min(end, start + 256);
        DecodeFp16(body, start, stop, block);
        for (size_t i = start; i < stop; ++i) emit(i, block[i - start]);
      }
      return;
    }
    case CodecId::kBf16:
      for (size_t i = begin; i < end; ++i) emit(i, Bf16ToFloat(LoadLE16(body + 2 * i)));
      return;
    case CodecId::kInt8: {
      const auto* q =
          reinterpret_cast<const int8_t*>(body + 4 * Buckets(n, param));
      for (size_t b = begin / param; b * param < end; ++b) {
        const float scale = BitsFloat(LoadLE32(body + 4 * b));
        const size_t last = std::min<size_t>(end, (b + 1) * param);
        for (size_t i = std::max<size_t>(begin, b * param); i < last; ++i) {
          emit(i, static_cast<float>(q[i]) * scale);
        }
      }
      return;
    }
    case CodecId::kSign: {
      // A set bit flips the scale's sign bit (-scale, bit for bit), eight
      // elements a byte where the CPU can (sign_block.h).
      const uint8_t* bits = body + 4 * Buckets(n, param);
      float block[256];
      for (size_t b = begin / param; b * param < end; ++b) {
        const uint32_t scale = LoadLE32(body + 4 * b);
        const size_t last = std::min<size_t>(end, (b + 1) * param);
        for (size_t start = std::max<size_t>(begin, b * param); start < last; start += 256) {
          const size_t stop = std::min(last, start + 256);
          DecodeSignValues(bits, scale, start, stop, block);
          for (size_t i = start; i < stop; ++i) emit(i, block[i - start]);
        }
      }
      return;
    }
    default:
      return;
  }
}

// A grain that keeps parallel blocks aligned to int8 buckets and sign bytes.
size_t DenseGrain(CodecId codec, uint32_t param);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_DENSE_CODEC_H_
