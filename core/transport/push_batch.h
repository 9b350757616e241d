// PUSH_BATCH: several small pushes of one worker and clock in one message,
// so that a layer's many small chunks (norms, biases) cost one send, one
// receive and one reply instead of one each. Pure functions, thread-safe.
//
// Request (header: kind PUSH_BATCH, clock = the pushes' stamp, element
// count = entries), each entry:
//    u32 layer   u32 chunk   u32 payload bytes   u32 reserved (zero)
//    the codec payload, then zero bytes up to a multiple of 8
// Reply (PUSH_BATCH + reply flag, element count = entries), per entry in
// request order:
//    u64 version   u32 status code   u32 message bytes
//    the message, then zero bytes up to a multiple of 8
// A status code of 0 is an applied push (version: the chunk's version after
// it; no message); any other code says why that entry was refused.
//
// The decoders check every length, count, code and padding byte before any
// entry is used; a malformed batch is refused whole.
#ifndef LEEWAY_CORE_TRANSPORT_PUSH_BATCH_H_
#define LEEWAY_CORE_TRANSPORT_PUSH_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/transport/batch_framing.h"

namespace leeway {

constexpr size_t kPushBatchEntryHeaderBytes = 16;
constexpr uint32_t kMaxPushBatchEntries = kMaxBatchEntries;

struct PushBatchEntry {
  uint32_t layer = 0;
  uint32_t chunk = 0;
  absl::Span<const uint8_t> payload;  // a view into the batch
};

// The bytes an entry with a payload of `payload_bytes` takes in a batch.
size_t PushBatchEntryBytes(size_t payload_bytes);

// Appends one entry to `batch`.
void AppendPushBatchEntry(uint32_t layer, uint32_t chunk, absl::Span<const uint8_t> payload,
                          std::vector<uint8_t>* batch);

// Splits a batch that says it holds `entries` entries; the views point into
// `batch`. InvalidArgument names what is wrong.
absl::StatusOr<std::vector<PushBatchEntry>> DecodePushBatch(absl::Span<const uint8_t> batch,
                                                            uint32_t entries);

// The reply to a batch, one result per entry (messages are cut to
// kMaxErrorMessageBytes, wire.h).
std::vector<uint8_t> EncodePushBatchReply(absl::Span<const absl::StatusOr<uint64_t>> results);

// The results in a reply that says it holds `entries` of them.
absl::StatusOr<std::vector<absl::StatusOr<uint64_t>>> DecodePushBatchReply(
    absl::Span<const uint8_t> reply, uint32_t entries);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_PUSH_BATCH_H_
