// The 16-byte header every codec payload starts with (layout in codec.h).
// ReadPayloadHeader validates magic, version, codec id and reserved bytes;
// the codec then checks sizes against the element count it expects.
// Pure functions, thread-safe.
#ifndef LEEWAY_KERNELS_PAYLOAD_H_
#define LEEWAY_KERNELS_PAYLOAD_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/codec.h"

namespace leeway {

constexpr uint16_t kPayloadMagic = 0x434C;  // "LC" in little-endian order
constexpr uint8_t kPayloadVersion = 1;
constexpr size_t kPayloadHeaderBytes = 16;

struct PayloadHeader {
  CodecId codec = CodecId::kNone;
  uint32_t elements = 0;
  uint32_t param = 0;  // codec-specific (see dense_codec.h, sparse_codec.h)
};

void WritePayloadHeader(const PayloadHeader& header, uint8_t* out);
absl::StatusOr<PayloadHeader> ReadPayloadHeader(
    absl::Span<const uint8_t> payload);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_PAYLOAD_H_
