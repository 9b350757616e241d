// Internal to the codec library: a payload validated in full (header,
// sizes, indices, finiteness) and its layout, for the decoders of both the
// CPU path and the CUDA twin. Pure, thread-safe.
#ifndef LEEWAY_KERNELS_PARSED_PAYLOAD_H_
#define LEEWAY_KERNELS_PARSED_PAYLOAD_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kernels/payload.h"
#include "kernels/sparse_codec.h"

namespace leeway {
namespace codec_internal {

struct ParsedPayload {
  PayloadHeader header;
  SparseView sparse;  // sparse codecs only
  const uint8_t* body = nullptr;
};

// Validates a payload that must hold `elements` elements.
absl::Status ParsePayload(absl::Span<const uint8_t> payload, size_t elements,
                          ParsedPayload* parsed);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_PARSED_PAYLOAD_H_
