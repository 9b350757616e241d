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

absl::StatusOr<const uint8_t*> BatchReader::Header(size_t bytes, const std::string& what) {
  if (message_.size() - at_ < bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": the ", noun_, " ends in its header"));
  }
  const uint8_t* header = message_.data() + at_;
  at_ += bytes;
  return header;
}

absl::StatusOr<absl::Span<const uint8_t>> BatchReader::Padded(size_t length,
                                                              const std::string& what) {
  if (Padded8(length) > message_.size() - at_) {
    return absl::InvalidArgumentError(absl::StrCat(what, " of ", length, " bytes overruns the ",
                                                   message_.size(), "-byte message"));
  }
  for (size_t i = at_ + length; i < at_ + Padded8(length); ++i) {
    if (message_[i] != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": nonzero padding"));
    }
  }
  const absl::Span<const uint8_t> field = message_.subspan(at_, length);
  at_ += Padded8(length);
  return field;
}

absl::Status BatchReader::Finish(const std::string& what) const {
  if (at_ != message_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has ", message_.size() - at_, " bytes after them"));
  }
  return absl::OkStatus();
}

absl::Status StatusFromWire(uint32_t code, absl::Span<const uint8_t> message) {
  return absl::Status(
      static_cast<absl::StatusCode>(code),
      absl::string_view(reinterpret_cast<const char*>(message.data()), message.size()));
}

absl::Status CheckBatchEntries(uint32_t entries, const char* what) {
  if (entries == 0 || entries > kMaxBatchEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("a ", what, " of ", entries, " entries (1 to ", kMaxBatchEntries, ")"));
  }
  return absl::OkStatus();
}

}  // namespace leeway
