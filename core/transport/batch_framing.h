// The framing shared by the batched messages (push_batch.h, pull_batch.h):
// entries whose variable parts are zero-padded to a multiple of 8 bytes,
// and the limit on entries a batch may hold. Reading checks each length
// against what is left and each padding byte before a view is handed out.
// Pure functions, thread-safe.
#ifndef LEEWAY_CORE_TRANSPORT_BATCH_FRAMING_H_
#define LEEWAY_CORE_TRANSPORT_BATCH_FRAMING_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace leeway {

constexpr uint32_t kMaxBatchEntries = 4096;

// `bytes` rounded up to a multiple of 8.
inline size_t Padded8(size_t bytes) { return (bytes + 7) & ~size_t{7}; }

// Appends `bytes` and the zeros that pad them to a multiple of 8.
void AppendPadded(absl::Span<const uint8_t> bytes, std::vector<uint8_t>* out);
void AppendPadded(absl::string_view text, std::vector<uint8_t>* out);

// The `length` bytes at `at` in `message`, whose padding must follow them
// and be zero; `what` names the field in the error.
absl::StatusOr<absl::Span<const uint8_t>> ReadPadded(absl::Span<const uint8_t> message, size_t at,
                                                     size_t length, const std::string& what);

// OK for 1 to kMaxBatchEntries entries; `what` names the batch.
absl::Status CheckBatchEntries(uint32_t entries, const char* what);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_BATCH_FRAMING_H_
