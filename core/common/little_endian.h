// Little-endian loads and stores for wire encodings. Unaligned-safe
// (memcpy-based); byte-swap only on big-endian hosts. Pure, thread-safe.
#ifndef LEEWAY_CORE_COMMON_LITTLE_ENDIAN_H_
#define LEEWAY_CORE_COMMON_LITTLE_ENDIAN_H_

#include <cstdint>
#include <cstring>

namespace leeway {

template <typename T>
inline T LoadLE(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  if constexpr (sizeof(T) == 2) value = __builtin_bswap16(value);
  if constexpr (sizeof(T) == 4) value = __builtin_bswap32(value);
  if constexpr (sizeof(T) == 8) value = __builtin_bswap64(value);
#endif
  return value;
}

template <typename T>
inline void StoreLE(uint8_t* p, T value) {
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  if constexpr (sizeof(T) == 2) value = __builtin_bswap16(value);
  if constexpr (sizeof(T) == 4) value = __builtin_bswap32(value);
  if constexpr (sizeof(T) == 8) value = __builtin_bswap64(value);
#endif
  std::memcpy(p, &value, sizeof(T));
}

inline uint16_t LoadLE16(const uint8_t* p) { return LoadLE<uint16_t>(p); }
inline uint32_t LoadLE32(const uint8_t* p) { return LoadLE<uint32_t>(p); }
inline uint64_t LoadLE64(const uint8_t* p) { return LoadLE<uint64_t>(p); }
inline void StoreLE16(uint8_t* p, uint16_t v) { StoreLE(p, v); }
inline void StoreLE32(uint8_t* p, uint32_t v) { StoreLE(p, v); }
inline void StoreLE64(uint8_t* p, uint64_t v) { StoreLE(p, v); }

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_LITTLE_ENDIAN_H_
