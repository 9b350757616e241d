#include "core/common/crc32c.h"

#include <array>
#include <cstring>

namespace leeway {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // reflected Castagnoli

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    }
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = MakeTable();

// Both variants take and return the finalized CRC of what came before, so
// that a checksum can be computed piece by piece.
uint32_t Crc32cTable(uint32_t previous, const uint8_t* bytes, size_t size) {
  uint32_t crc = previous ^ 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = kTable[(crc ^ bytes[i]) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

#if defined(__x86_64__)
// The SSE4.2 crc32 instruction computes CRC-32C: 8 bytes a cycle or so.
__attribute__((target("sse4.2"))) uint32_t Crc32cSse42(uint32_t previous,
                                                       const uint8_t* bytes,
                                                       size_t size) {
  uint64_t crc = previous ^ 0xFFFFFFFFu;
  for (; size >= 8; size -= 8, bytes += 8) {
    uint64_t word;
    std::memcpy(&word, bytes, 8);
    crc = __builtin_ia32_crc32di(crc, word);
  }
  uint32_t crc32 = static_cast<uint32_t>(crc);
  for (; size > 0; --size, ++bytes) crc32 = __builtin_ia32_crc32qi(crc32, *bytes);
  return crc32 ^ 0xFFFFFFFFu;
}
#endif

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
#if defined(__x86_64__)
  static const bool kHaveSse42 = __builtin_cpu_supports("sse4.2");
  if (kHaveSse42) return Crc32cSse42(crc, bytes, size);
#endif
  return Crc32cTable(crc, bytes, size);
}

uint32_t Crc32c(const void* data, size_t size) {
  return Crc32cExtend(0, data, size);
}

namespace crc32c_internal {
uint32_t Crc32cPortable(const void* data, size_t size) {
  return Crc32cTable(0, static_cast<const uint8_t*>(data), size);
}
}  // namespace crc32c_internal

}  // namespace leeway
