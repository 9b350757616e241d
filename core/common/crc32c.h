// CRC-32C (Castagnoli), the checksum of Leeway's wire headers.
//
// Pure function, thread-safe. Matches the standard check value:
// Crc32c("123456789") == 0xE3069283.
#ifndef LEEWAY_CORE_COMMON_CRC32C_H_
#define LEEWAY_CORE_COMMON_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace leeway {

// Uses the SSE4.2 crc32 instruction where the CPU has it.
uint32_t Crc32c(const void* data, size_t size);

// The CRC of (what `crc` was computed over) followed by data:
// Crc32cExtend(Crc32c(a), b) == Crc32c(a + b); Crc32cExtend(0, x) == Crc32c(x).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

namespace crc32c_internal {
// The table-driven version, for tests that compare the two.
uint32_t Crc32cPortable(const void* data, size_t size);
}  // namespace crc32c_internal

}  // namespace leeway

#endif  // LEEWAY_CORE_COMMON_CRC32C_H_
