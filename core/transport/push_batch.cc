#include "core/transport/push_batch.h"

#include <cstring>

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
  size_t at = 0;
  for (uint32_t i = 0; i < entries; ++i) {
    const std::string what = absl::StrCat("push batch entry ", i);
    if (batch.size() - at < kPushBatchEntryHeaderBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the batch ends in its header"));
    }
    const uint8_t* p = batch.data() + at;
    if (LoadLE32(p + 12) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": nonzero reserved field"));
    }
    PushBatchEntry entry;
    entry.layer = LoadLE32(p);
    entry.chunk = LoadLE32(p + 4);
    const uint32_t length = LoadLE32(p + 8);
    at += kPushBatchEntryHeaderBytes;
    absl::StatusOr<absl::Span<const uint8_t>> payload = ReadPadded(batch, at, length, what);
    if (!payload.ok()) return payload.status();
    entry.payload = *payload;
    at += Padded8(length);
    out.push_back(entry);
  }
  if (at != batch.size()) {
    return absl::InvalidArgumentError(absl::StrCat("push batch of ", entries, " entries has ",
                                                   batch.size() - at, " bytes after them"));
  }
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
  size_t at = 0;
  for (uint32_t i = 0; i < entries; ++i) {
    const std::string what = absl::StrCat("push batch reply entry ", i);
    if (reply.size() - at < kReplyEntryHeaderBytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the reply ends in its header"));
    }
    const uint8_t* p = reply.data() + at;
    const uint64_t version = LoadLE64(p);
    const uint32_t code = LoadLE32(p + 8);
    const uint32_t length = LoadLE32(p + 12);
    if (code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": status code ", code));
    }
    if (length > kMaxErrorMessageBytes || (code == 0 ? length != 0 : version != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": code ", code, " with version ",
                                                     version, " and a ", length, "-byte message"));
    }
    at += kReplyEntryHeaderBytes;
    absl::StatusOr<absl::Span<const uint8_t>> message = ReadPadded(reply, at, length, what);
    if (!message.ok()) return message.status();
    at += Padded8(length);
    if (code == 0) {
      out.emplace_back(version);
    } else {
      out.emplace_back(absl::Status(
          static_cast<absl::StatusCode>(code),
          absl::string_view(reinterpret_cast<const char*>(message->data()), message->size())));
    }
  }
  if (at != reply.size()) {
    return absl::InvalidArgumentError(absl::StrCat("push batch reply of ", entries, " entries has ",
                                                   reply.size() - at, " bytes after them"));
  }
  return out;
}

}  // namespace leeway
