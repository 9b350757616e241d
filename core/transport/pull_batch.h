// PULL_BATCH: several pulls of one worker at one clock in one message and
// one reply, for chunks small enough that copying their replies together
// costs less than a round trip each. SSP readiness depends on the worker
// and the clock alone, so one wait covers every entry. Pure functions,
// thread-safe.
//
// Request (header: kind PULL_BATCH, clock = the worker's, element count =
// entries), each entry 16 bytes:
//    u32 layer   u32 chunk   u64 version held (~0: none)
// Reply (PULL_BATCH + reply flag, element count = entries), per entry in
// request order:
//    u64 version   u32 status code   u32 body bytes   u8 codec   u8[7] zero
//    the body, then zero bytes up to a multiple of 8
// With status 0 the body is what a PULL_REPLY would carry (empty: not
// modified; a codec payload: dense or delta); otherwise it is the message
// of the refusal and version and codec are zero.
//
// The decoders check every length, count, code and padding byte before any
// entry is used; a malformed batch is refused whole.
#ifndef LEEWAY_CORE_TRANSPORT_PULL_BATCH_H_
#define LEEWAY_CORE_TRANSPORT_PULL_BATCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/transport/batch_framing.h"

namespace leeway {

struct PullBatchEntry {
  uint32_t layer = 0;
  uint32_t chunk = 0;
  uint64_t version = ~uint64_t{0};
};

struct PullBatchResult {
  absl::Status status;
  uint64_t version = 0;
  uint8_t codec = 0;
  absl::Span<const uint8_t> payload;  // a view into the reply
};

void AppendPullBatchEntry(const PullBatchEntry& entry, std::vector<uint8_t>* batch);
absl::StatusOr<std::vector<PullBatchEntry>> DecodePullBatch(absl::Span<const uint8_t> batch,
                                                            uint32_t entries);

// Appends one entry's answer: `payload` under `version` and `codec` when
// `status` is OK, else the refusal (its message cut to
// kMaxErrorMessageBytes, wire.h).
void AppendPullBatchResult(const absl::Status& status, uint64_t version, uint8_t codec,
                           absl::Span<const uint8_t> payload, std::vector<uint8_t>* reply);
absl::StatusOr<std::vector<PullBatchResult>> DecodePullBatchReply(absl::Span<const uint8_t> reply,
                                                                  uint32_t entries);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_PULL_BATCH_H_
