#include "worker/server_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/transport/pull_batch.h"
#include "core/transport/push_batch.h"
#include "kernels/codec.h"
#include "kernels/indexed_prefetch.h"
#include "kernels/payload.h"

namespace leeway {

ServerClient::ServerClient(Transport* transport, PeerId server,
                           absl::Duration timeout)
    : transport_(transport), server_(server), timeout_(timeout) {}

absl::Status ServerClient::Wait(const Ticket& ticket) {
  return transport_->Wait(ticket, absl::InfiniteFuture());
}

absl::StatusOr<uint32_t> ServerClient::Join(uint32_t resume_at) {
  WireHeader h;
  h.kind = MessageKind::kClock;
  h.flags = kFlagInitial;
  h.clock = resume_at;
  Ticket call = transport_->Call(server_, h, {}, {}, Deadline());
  absl::Status status = Wait(call);
  if (!status.ok()) return status;
  return call.reply().header.clock;
}

absl::StatusOr<bool> ServerClient::Initialize(uint32_t layer, uint32_t chunk,
                                              absl::Span<const float> values) {
  CodecParams dense;
  dense.codec = CodecId::kNone;
  dense.threads = 1;
  std::vector<uint8_t> payload;
  absl::Status encoded = Encode(values, {}, dense, &payload);
  if (!encoded.ok()) return encoded;
  WireHeader h;
  h.kind = MessageKind::kPush;
  h.flags = kFlagInitial;
  h.layer = layer;
  h.chunk = chunk;
  h.element_count = static_cast<uint32_t>(values.size());
  h.codec = static_cast<uint8_t>(CodecId::kNone);
  Ticket call = transport_->Call(server_, h, payload, {}, Deadline());
  absl::Status status = Wait(call);
  if (!status.ok()) return status;
  return call.reply().header.element_count == 1;
}

absl::StatusOr<bool> ServerClient::InitializeWhenDeclared(uint32_t layer, uint32_t chunk,
                                                          absl::Span<const float> values,
                                                          absl::Time until) {
  while (true) {
    absl::StatusOr<bool> taken = Initialize(layer, chunk, values);
    if (taken.ok() || taken.status().code() != absl::StatusCode::kNotFound ||
        absl::Now() >= until) {
      return taken;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

Ticket ServerClient::PushAsync(uint32_t layer, uint32_t chunk, uint32_t clock,
                               absl::Span<const uint8_t> payload) {
  WireHeader h;
  h.kind = MessageKind::kPush;
  h.layer = layer;
  h.chunk = chunk;
  h.clock = clock;
  absl::StatusOr<PayloadHeader> described = ReadPayloadHeader(payload);
  if (described.ok()) {
    h.codec = static_cast<uint8_t>(described->codec);
    h.element_count = described->elements;
  }
  return transport_->Call(server_, h, payload, {}, Deadline());
}

Ticket ServerClient::PushBatchAsync(uint32_t clock, uint32_t entries,
                                    absl::Span<const uint8_t> batch) {
  WireHeader h;
  h.kind = MessageKind::kPushBatch;
  h.clock = clock;
  h.element_count = entries;
  return transport_->Call(server_, h, batch, {}, Deadline());
}

absl::StatusOr<std::vector<absl::StatusOr<uint64_t>>> ServerClient::PushBatchResults(
    const Ticket& done, uint32_t entries) {
  const Message& reply = done.reply();
  if (reply.header.kind != MessageKind::kPushBatch || reply.header.element_count != entries) {
    return absl::DataLossError(absl::StrCat("a batch of ", entries, " pushes answered by ",
                                            MessageKindName(reply.header.kind), " of ",
                                            reply.header.element_count, " entries"));
  }
  return DecodePushBatchReply(reply.payload, entries);
}

absl::Status ServerClient::Clock(uint32_t clock, uint32_t pushes) {
  WireHeader h;
  h.kind = MessageKind::kClock;
  h.clock = clock;
  h.element_count = pushes;
  return Wait(transport_->Call(server_, h, {}, {}, Deadline()));
}

namespace {

// Brings `copy` (and `mirror`) up to date from a reply's payload (Pull).
absl::StatusOr<PullForm> ApplyPullReply(uint8_t codec_id, uint64_t version,
                                        absl::Span<const uint8_t> payload, uint32_t elements,
                                        ChunkCopy* copy, absl::Span<float> mirror) {
  if (payload.empty()) {
    if (copy->values.size() != elements) {
      return absl::DataLossError("server said not modified to a worker with no copy");
    }
    copy->version = version;
    return PullForm::kNotModified;
  }
  const CodecId codec = static_cast<CodecId>(codec_id);
  if (IsSparse(codec)) {
    if (copy->values.size() != elements) {
      return absl::DataLossError("server sent a delta to a worker with no copy");
    }
    std::vector<uint32_t> indices;
    std::vector<float> values;
    absl::Status decoded = DecodePairs(payload, elements, &indices, &values);
    if (!decoded.ok()) return decoded;
    ScatterValues(indices, values, absl::MakeSpan(copy->values));
    if (!mirror.empty()) ScatterValues(indices, values, mirror);
    copy->version = version;
    return PullForm::kDelta;
  }
  std::vector<float> values(elements);
  absl::Status decoded = Decode(payload, absl::MakeSpan(values), 1);
  if (!decoded.ok()) return decoded;
  if (!mirror.empty()) std::copy(values.begin(), values.end(), mirror.begin());
  copy->values = std::move(values);
  copy->version = version;
  return PullForm::kDense;
}

absl::Status CheckMirror(uint32_t elements, absl::Span<float> mirror) {
  if (!mirror.empty() && mirror.size() != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat("pull of ", elements, " elements with a mirror of ", mirror.size()));
  }
  return absl::OkStatus();
}

uint64_t HeldVersion(const ChunkCopy& copy, uint32_t elements) {
  return copy.values.size() == elements ? copy.version : ~uint64_t{0};
}

}  // namespace

absl::StatusOr<PullForm> ServerClient::Pull(uint32_t layer, uint32_t chunk, uint32_t clock,
                                            uint32_t elements, ChunkCopy* copy,
                                            uint64_t* reply_bytes, absl::Span<float> mirror) {
  if (absl::Status checked = CheckMirror(elements, mirror); !checked.ok()) return checked;
  WireHeader h;
  h.kind = MessageKind::kPull;
  h.layer = layer;
  h.chunk = chunk;
  h.clock = clock;
  h.version = HeldVersion(*copy, elements);
  Ticket call = transport_->Call(server_, h, {}, {}, Deadline());
  absl::Status status = Wait(call);
  if (!status.ok()) return status;
  const Message& reply = call.reply();
  if (reply_bytes != nullptr) *reply_bytes = reply.payload.size();
  return ApplyPullReply(reply.header.codec, reply.header.version, reply.payload, elements, copy,
                        mirror);
}

absl::StatusOr<std::vector<absl::StatusOr<PullForm>>> ServerClient::PullBatch(
    uint32_t clock, absl::Span<const PullRequest> requests) {
  std::vector<absl::StatusOr<PullForm>> forms(requests.size(), PullForm::kNotModified);
  std::vector<uint8_t> batch;
  for (const PullRequest& r : requests) {
    if (absl::Status checked = CheckMirror(r.elements, r.mirror); !checked.ok()) return checked;
    AppendPullBatchEntry({r.layer, r.chunk, HeldVersion(*r.copy, r.elements)}, &batch);
  }
  WireHeader h;
  h.kind = MessageKind::kPullBatch;
  h.clock = clock;
  h.element_count = static_cast<uint32_t>(requests.size());
  Ticket call = transport_->Call(server_, h, batch, {}, Deadline());
  absl::Status status = Wait(call);
  if (!status.ok()) return status;
  const Message& reply = call.reply();
  if (reply.header.kind != MessageKind::kPullBatch ||
      reply.header.element_count != requests.size()) {
    return absl::DataLossError(absl::StrCat("a batch of ", requests.size(), " pulls answered by ",
                                            MessageKindName(reply.header.kind), " of ",
                                            reply.header.element_count, " entries"));
  }
  absl::StatusOr<std::vector<PullBatchResult>> results =
      DecodePullBatchReply(reply.payload, h.element_count);
  if (!results.ok()) return results.status();
  for (size_t i = 0; i < requests.size(); ++i) {
    const PullRequest& r = requests[i];
    const PullBatchResult& result = (*results)[i];
    if (r.reply_bytes != nullptr) *r.reply_bytes = result.payload.size();
    forms[i] = result.status.ok() ? ApplyPullReply(result.codec, result.version, result.payload,
                                                   r.elements, r.copy, r.mirror)
                                  : result.status;
  }
  return forms;
}

}  // namespace leeway
