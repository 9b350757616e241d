#include "core/transport/batch_framing.h"

#include "absl/strings/str_cat.h"

namespace leeway {

void AppendPadded(absl::Span<const uint8_t> bytes, std::vector<uint8_t>* out) {
  out->insert(out->end(), bytes.begin(), bytes.end());
  out->resize(out->size() + Padded8(bytes.size()) - bytes.size(), 0);
}

void AppendPadded(absl::string_view text, std::vector<uint8_t>* out) {
  AppendPadded(absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text.data()), text.size()),
               out);
}

absl::StatusOr<absl::Span<const uint8_t>> ReadPadded(absl::Span<const uint8_t> message, size_t at,
                                                     size_t length, const std::string& what) {
  const size_t left = at <= message.size() ? message.size() - at : 0;
  if (Padded8(length) > left) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of ", length, " bytes overruns the ",
                                                   message.size(), "-byte message"));
  }
  for (size_t i = at + length; i < at + Padded8(length); ++i) {
    if (message[i] != 0) return absl::InvalidArgumentError(absl::StrCat(what, ": nonzero padding"));
  }
  return message.subspan(at, length);
}

absl::Status CheckBatchEntries(uint32_t entries, const char* what) {
  if (entries == 0 || entries > kMaxBatchEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", what, " of ", entries, " entries (1 to ", kMaxBatchEntries, ")"));
  }
  return absl::OkStatus();
}

}  // namespace leeway
