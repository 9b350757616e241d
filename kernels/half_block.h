// fp16 over whole blocks, for the CPU codecs: the encode with error feedback
// (v = g + r, body = fp16(v), r = v - float(body)) and the decode to floats.
// On x86-64 CPUs with F16C and AVX2 it converts eight values an instruction
// (chosen at run time: cpu_features.h CpuHasF16c), elsewhere it calls half.h's scalar functions; the
// results are bit-identical (round to nearest even; finite values beyond
// fp16's range saturate to +-65504, by clamping before the conversion).
// Inputs are finite (the codec checks them first). Thread-safe.
#ifndef LEEWAY_KERNELS_HALF_BLOCK_H_
#define LEEWAY_KERNELS_HALF_BLOCK_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace codec_internal {

// Elements [begin, end): body holds little-endian fp16 at 2 bytes each. With
// r null, v = g and nothing else is written.
void EncodeFp16(size_t begin, size_t end, const float* g, float* r, uint8_t* body);

// dst[i - begin] = float(body[i]) for i in [begin, end).
void DecodeFp16(const uint8_t* body, size_t begin, size_t end, float* dst);

// The scalar versions, for tests that compare the two paths.
void EncodeFp16Scalar(size_t begin, size_t end, const float* g, float* r, uint8_t* body);
void DecodeFp16Scalar(const uint8_t* body, size_t begin, size_t end, float* dst);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_HALF_BLOCK_H_
