// libFuzzer target for the codec decoders: any bytes as a payload, decoded
// into a buffer of the element count the payload claims (bounded), both as
// Decode and DecodeAccumulate. A decoder may refuse; it may never read or
// write out of bounds.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/codec.h"
#include "kernels/payload.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::Span<const uint8_t> payload(data, size);
  auto header = leeway::ReadPayloadHeader(payload);
  if (!header.ok() || header->elements > (1u << 16)) return 0;
  std::vector<float> out(header->elements, 1.0f);
  (void)leeway::Decode(payload, absl::MakeSpan(out));
  (void)leeway::DecodeAccumulate(payload, 0.5f, absl::MakeSpan(out));
  // A destination of the wrong size must be refused, not overrun.
  std::vector<float> smaller(header->elements / 2);
  (void)leeway::Decode(payload, absl::MakeSpan(smaller));
  return 0;
}
