// float <-> IEEE fp16 and bfloat16 conversions, round to nearest even.
// Finite inputs beyond a format's range saturate to its largest finite value
// (so error feedback keeps what did not fit). Shared by the CPU codecs and
// their CUDA twins (bit-identical results). Pure, thread-safe.
#ifndef LEEWAY_KERNELS_HALF_H_
#define LEEWAY_KERNELS_HALF_H_

#include <cstdint>
#include <cstring>

#include "kernels/host_device.h"

namespace leeway {

LEEWAY_HOST_DEVICE inline uint32_t FloatBits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

LEEWAY_HOST_DEVICE inline float BitsFloat(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

// |x| as an integer key: for finite floats, keys order like magnitudes.
LEEWAY_HOST_DEVICE inline uint32_t MagnitudeKey(float x) {
  return FloatBits(x) & 0x7FFFFFFFu;
}

LEEWAY_HOST_DEVICE inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  const uint32_t rounding = 0x7FFFu + ((u >> 16) & 1u);
  uint32_t r = u + rounding;
  if (((r >> 23) & 0xFFu) == 0xFFu && ((u >> 23) & 0xFFu) != 0xFFu) {
    r = (u & 0x80000000u) | 0x7F7F0000u;  // saturate to the largest finite
  }
  return static_cast<uint16_t>(r >> 16);
}

LEEWAY_HOST_DEVICE inline float Bf16ToFloat(uint16_t h) { return BitsFloat(uint32_t{h} << 16); }

LEEWAY_HOST_DEVICE inline uint16_t FloatToFp16(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const float a = BitsFloat(u & 0x7FFFFFFFu);
  if (a >= 65520.0f) return sign | 0x7BFFu;  // saturate (65504)
  if (a < 6.103515625e-05f) {                // subnormal or zero in fp16
    // Scale into the subnormal range and round to nearest even.
    const float scaled = a * 16777216.0f;  // 2^24: units of the smallest subnormal
    uint32_t m = static_cast<uint32_t>(scaled);
    const float frac = scaled - static_cast<float>(m);
    if (frac > 0.5f || (frac == 0.5f && (m & 1u))) ++m;
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t exp = ((u >> 23) & 0xFFu) - 127 + 15;
  uint32_t mant = u & 0x7FFFFFu;
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into exp
  if (h >= 0x7C00u) h = 0x7BFFu;
  return sign | static_cast<uint16_t>(h);
}

LEEWAY_HOST_DEVICE inline float Fp16ToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float value = static_cast<float>(mant) * 5.9604644775390625e-08f;  // 2^-24
    return (sign != 0u) ? -value : value;
  }
  if (exp == 0x1F) return BitsFloat(sign | 0x7F800000u | (mant << 13));
  return BitsFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

}  // namespace leeway

#endif  // LEEWAY_KERNELS_HALF_H_
