#include "core/transport/push_batch.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/common/little_endian.h"
#include "core/transport/batch_framing.h"
#include "core/transport/wire.h"

namespace leeway {
namespace {

constexpr size_t kReplyEntryHeaderBytes = 16;

}  // namespace

size_t PushBatchEntryBytes(size_t payload_bytes) {
  return kPushBatchEntryHeaderBytes + Padded8(payload_bytes);
}

void AppendPushBatchEntry(uint32_t layer, uint32_t chunk, absl::Span<const uint8_t> payload,
                          std::vector<uint8_t>* batch) {
  uint8_t header[kPushBatchEntryHeaderBytes] = {};
  StoreLE32(header, layer);
  StoreLE32(header + 4, chunk);
  StoreLE32(header + 8, static_cast<uint32_t>(payload.size()));
  batch->insert(batch->end(), header, header + sizeof(header));
  AppendPadded(payload, batch);
}

absl::StatusOr<std::vector<PushBatchEntry>> DecodePushBatch(absl::Span<const uint8_t> batch,
                                                            uint32_t entries) {
  if (absl::Status count = CheckBatchEntries(entries, "push batch"); !count.ok()) return count;
  std::vector<PushBatchEntry> out;
  out.reserve(entries);
  BatchReader reader(batch, "batch");
  for (uint32_t i = 0; i < entries; ++i) {
    const std::string what = absl::StrCat("push batch entry ", i);
    absl::StatusOr<const uint8_t*> p = reader.Header(kPushBatchEntryHeaderBytes, what);
    if (!p.ok()) return p.status();
    if (LoadLE32(*p + 12) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": nonzero reserved field"));
    }
    absl::StatusOr<absl::Span<const uint8_t>> payload = reader.Padded(LoadLE32(*p + 8), what);
    if (!payload.ok()) return payload.status();
    out.push_back(PushBatchEntry{LoadLE32(*p), LoadLE32(*p + 4), *payload});
  }
  absl::Status finished = reader.Finish(absl::StrCat("push batch of ", entries, " entries"));
  if (!finished.ok()) return finished;
  return out;
}

std::vector<uint8_t> EncodePushBatchReply(absl::Span<const absl::StatusOr<uint64_t>> results) {
  std::vector<uint8_t> out;
  for (const absl::StatusOr<uint64_t>& result : results) {
    const absl::string_view message =
        result.ok() ? absl::string_view()
                    : result.status().message().substr(0, kMaxErrorMessageBytes);
    uint8_t header[kReplyEntryHeaderBytes] = {};
    StoreLE64(header, result.ok() ? *result : 0);
    StoreLE32(header + 8, static_cast<uint32_t>(result.status().code()));
    StoreLE32(header + 12, static_cast<uint32_t>(message.size()));
    out.insert(out.end(), header, header + sizeof(header));
    AppendPadded(message, &out);
  }
  return out;
}

absl::StatusOr<std::vector<absl::StatusOr<uint64_t>>> DecodePushBatchReply(
    absl::Span<const uint8_t> reply, uint32_t entries) {
  if (absl::Status count = CheckBatchEntries(entries, "push batch"); !count.ok()) return count;
  std::vector<absl::StatusOr<uint64_t>> out;
  out.reserve(entries);
  BatchReader reader(reply, "reply");
  for (uint32_t i = 0; i < entries; ++i) {
    const std::string what = absl::StrCat("push batch reply entry ", i);
    absl::StatusOr<const uint8_t*> p = reader.Header(kReplyEntryHeaderBytes, what);
    if (!p.ok()) return p.status();
    const uint64_t version = LoadLE64(*p);
    const uint32_t code = LoadLE32(*p + 8);
    const uint32_t length = LoadLE32(*p + 12);
    if (!IsStatusCode(code)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": status code ", code));
    }
    if (length > kMaxErrorMessageBytes || (code == 0 ? length != 0 : version != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": code ", code, " with version ",
                                                     version, " and a ", length, "-byte message"));
    }
    absl::StatusOr<absl::Span<const uint8_t>> message = reader.Padded(length, what);
    if (!message.ok()) return message.status();
    if (code == 0) {
      out.emplace_back(version);
    } else {
      out.emplace_back(StatusFromWire(code, *message));
    }
  }
  absl::Status finished = reader.Finish(absl::StrCat("push batch reply of ", entries, " entries"));
  if (!finished.ok()) return finished;
  return out;
}

}  // namespace leeway
