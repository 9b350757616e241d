// libFuzzer target for everything a receiver decodes from the network before
// use: the wire header with its AM id and payload length (ValidateIncoming),
// then the payloads the transport itself reads (HELLO, ERROR) and the push
// and pull batch framing (push_batch.h, pull_batch.h) that servers and
// workers read.
//
// Input layout: byte 0 = AM id, bytes 1..64 = header (fewer when the input
// is shorter: a truncated header), the rest = payload.
#include <cstddef>
#include <cstdint>

#include "core/transport/hello.h"
#include "core/transport/pull_batch.h"
#include "core/transport/push_batch.h"
#include "core/transport/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const unsigned am_id = data[0] % 32;
  const size_t header_bytes = size - 1 < leeway::kWireHeaderSize
                                  ? size - 1
                                  : leeway::kWireHeaderSize;
  const absl::Span<const uint8_t> header(data + 1, header_bytes);
  const absl::Span<const uint8_t> payload(data + 1 + header_bytes,
                                          size - 1 - header_bytes);
  leeway::WireLimits limits;
  limits.max_payload_bytes = 1 << 20;
  auto decoded =
      leeway::ValidateIncoming(am_id, header, payload.size(), limits, 42);
  if (!decoded.ok()) return 0;
  if (decoded->kind == leeway::MessageKind::kHello) {
    (void)leeway::DecodeHello(payload);
  } else if (decoded->kind == leeway::MessageKind::kError) {
    absl::Status remote;
    (void)leeway::DecodeErrorPayload(payload, &remote);
  } else if (decoded->kind == leeway::MessageKind::kPushBatch) {
    if (decoded->is_reply()) {
      (void)leeway::DecodePushBatchReply(payload, decoded->element_count);
    } else {
      (void)leeway::DecodePushBatch(payload, decoded->element_count);
    }
  } else if (decoded->kind == leeway::MessageKind::kPullBatch) {
    if (decoded->is_reply()) {
      (void)leeway::DecodePullBatchReply(payload, decoded->element_count);
    } else {
      (void)leeway::DecodePullBatch(payload, decoded->element_count);
    }
  }
  return 0;
}
