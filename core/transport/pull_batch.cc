#include "core/transport/pull_batch.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/common/little_endian.h"
#include "core/transport/wire.h"

namespace leeway {
namespace {

constexpr size_t kRequestEntryBytes = 16;
constexpr size_t kReplyEntryHeaderBytes = 24;

}  // namespace

void AppendPullBatchEntry(const PullBatchEntry& entry, std::vector<uint8_t>* batch) {
  uint8_t bytes[kRequestEntryBytes];
  StoreLE32(bytes, entry.layer);
  StoreLE32(bytes + 4, entry.chunk);
  StoreLE64(bytes + 8, entry.version);
  batch->insert(batch->end(), bytes, bytes + sizeof(bytes));
}

absl::StatusOr<std::vector<PullBatchEntry>> DecodePullBatch(absl::Span<const uint8_t> batch,
                                                            uint32_t entries) {
  if (absl::Status count = CheckBatchEntries(entries, "pull batch"); !count.ok()) return count;
  if (batch.size() != entries * kRequestEntryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("a pull batch of ", entries, " entries in ",
                                                   batch.size(), " bytes, not ",
                                                   entries * kRequestEntryBytes));
  }
  std::vector<PullBatchEntry> out(entries);
  for (uint32_t i = 0; i < entries; ++i) {
    const uint8_t* p = batch.data() + i * kRequestEntryBytes;
    out[i].layer = LoadLE32(p);
    out[i].chunk = LoadLE32(p + 4);
    out[i].version = LoadLE64(p + 8);
  }
  return out;
}

void AppendPullBatchResult(const absl::Status& status, uint64_t version, uint8_t codec,
                           absl::Span<const uint8_t> payload, std::vector<uint8_t>* reply) {
  const absl::string_view message = status.message().substr(0, kMaxErrorMessageBytes);
  uint8_t header[kReplyEntryHeaderBytes] = {};
  StoreLE64(header, status.ok() ? version : 0);
  StoreLE32(header + 8, static_cast<uint32_t>(status.code()));
  StoreLE32(header + 12, static_cast<uint32_t>(status.ok() ? payload.size() : message.size()));
  header[16] = status.ok() ? codec : 0;
  reply->insert(reply->end(), header, header + sizeof(header));
  if (status.ok()) {
    AppendPadded(payload, reply);
  } else {
    AppendPadded(message, reply);
  }
}

absl::StatusOr<std::vector<PullBatchResult>> DecodePullBatchReply(absl::Span<const uint8_t> reply,
                                                                  uint32_t entries) {
  if (absl::Status count = CheckBatchEntries(entries, "pull batch"); !count.ok()) return count;
  std::vector<PullBatchResult> out;
  out.reserve(entries);
  BatchReader reader(reply, "reply");
  for (uint32_t i = 0; i < entries; ++i) {
    const std::string what = absl::StrCat("pull batch reply entry ", i);
    absl::StatusOr<const uint8_t*> header = reader.Header(kReplyEntryHeaderBytes, what);
    if (!header.ok()) return header.status();
    const uint8_t* p = *header;
    PullBatchResult result;
    result.version = LoadLE64(p);
    const uint32_t code = LoadLE32(p + 8);
    const uint32_t length = LoadLE32(p + 12);
    result.codec = p[16];
    for (int b = 17; b < 24; ++b) {
      if (p[b] != 0) {
        return absl::InvalidArgumentError(absl::StrCat(what, ": nonzero reserved byte"));
      }
    }
    if (!IsStatusCode(code)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": status code ", code));
    }
    if (code != 0 && (length > kMaxErrorMessageBytes || result.version != 0 || result.codec != 0)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": refusal ", code, " with version ",
                                                     result.version, ", codec ", result.codec,
                                                     " and a ", length, "-byte message"));
    }
    absl::StatusOr<absl::Span<const uint8_t>> body = reader.Padded(length, what);
    if (!body.ok()) return body.status();
    if (code == 0) {
      result.payload = *body;
    } else {
      result.status = StatusFromWire(code, *body);
    }
    out.push_back(result);
  }
  absl::Status finished = reader.Finish(absl::StrCat("pull batch reply of ", entries, " entries"));
  if (!finished.ok()) return finished;
  return out;
}

}  // namespace leeway
