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

// Reads a batch message front to back: each entry's fixed header, then its
// padded variable part. Every read checks what is left before it hands out
// a view; `what` names the entry (or, for Finish, the message) in errors.
class BatchReader {
 public:
  // `noun` names the message in errors: "batch" or "reply".
  BatchReader(absl::Span<const uint8_t> message, const char* noun)
      : message_(message), noun_(noun) {}

  // The next `bytes` bytes: an entry's header.
  absl::StatusOr<const uint8_t*> Header(size_t bytes, const std::string& what);
  // The next `length` bytes, which zero padding up to a multiple of 8 must
  // follow.
  absl::StatusOr<absl::Span<const uint8_t>> Padded(size_t length, const std::string& what);
  // OK when the entries took the whole message.
  absl::Status Finish(const std::string& what) const;

 private:
  absl::Span<const uint8_t> message_;
  const char* noun_;
  size_t at_ = 0;
};

// Whether `code` is an absl::StatusCode (0, OK, included).
inline bool IsStatusCode(uint32_t code) {
  return code <= static_cast<uint32_t>(absl::StatusCode::kUnauthenticated);
}
// The Status a reply entry's code (IsStatusCode) and message stand for.
absl::Status StatusFromWire(uint32_t code, absl::Span<const uint8_t> message);

// OK for 1 to kMaxBatchEntries entries; `what` names the batch.
absl::Status CheckBatchEntries(uint32_t entries, const char* what);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_BATCH_FRAMING_H_
