#include "core/transport/wire.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/common/crc32c.h"
#include "core/common/little_endian.h"

namespace leeway {
namespace {

constexpr size_t kChecksumOffset = 60;

}  // namespace

const char* MessageKindName(MessageKind kind) {
  switch (kind) {
    case MessageKind::kHello: return "HELLO";
    case MessageKind::kPush: return "PUSH";
    case MessageKind::kPull: return "PULL";
    case MessageKind::kPullReply: return "PULL_REPLY";
    case MessageKind::kClock: return "CLOCK";
    case MessageKind::kError: return "ERROR";
    case MessageKind::kKeepalive: return "KEEPALIVE";
    case MessageKind::kPushBatch:
      return "PUSH_BATCH";
    case MessageKind::kPullBatch:
      return "PULL_BATCH";
  }
  return "UNKNOWN";
}

bool IsKnownMessageKind(int kind) {
  return kind >= kMinMessageKind && kind <= kMaxMessageKind;
}

std::string WireHeader::DebugString() const {
  return absl::StrFormat(
      "%s flags=%d job=%d rank=%d layer=%d chunk=%d clock=%d version=%d "
      "request=%d payload=%d elements=%d codec=%d",
      MessageKindName(kind), flags, job_id, sender_rank, layer, chunk, clock,
      version, request_id, payload_bytes, element_count, codec);
}

void EncodeHeader(const WireHeader& h, uint8_t* out) {
  // Eight 8-byte stores, not a zeroing and a store per field: on a sender
  // they queue behind the last payload's copy into a shared-memory FIFO, and
  // the checksum's 8-byte loads below each match one store (forwarded, not
  // waiting for the stores to leave the core).
  StoreLE64(out + 0, uint64_t{kWireMagic} | uint64_t{kProtocolVersion} << 32 |
                         uint64_t{static_cast<uint8_t>(h.kind)} << 48 | uint64_t{h.flags} << 56);
  StoreLE64(out + 8, h.job_id);
  StoreLE64(out + 16, uint64_t{h.sender_rank} | uint64_t{h.layer} << 32);
  StoreLE64(out + 24, uint64_t{h.chunk} | uint64_t{h.clock} << 32);
  StoreLE64(out + 32, h.version);
  StoreLE64(out + 40, h.request_id);
  StoreLE64(out + 48, uint64_t{h.payload_bytes} | uint64_t{h.element_count} << 32);
  StoreLE64(out + 56, uint64_t{h.codec});  // bytes 57-59 zero; the checksum at 60
  StoreLE32(out + kChecksumOffset, Crc32c(out, kChecksumOffset));
}

absl::StatusOr<WireHeader> DecodeHeader(absl::Span<const uint8_t> bytes,
                                        const WireLimits& limits) {
  if (bytes.size() != kWireHeaderSize) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wire header is ", bytes.size(), " bytes, want ", kWireHeaderSize));
  }
  const uint8_t* p = bytes.data();
  if (LoadLE32(p) != kWireMagic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad magic 0x%08x", LoadLE32(p)));
  }
  if (LoadLE16(p + 4) != kProtocolVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported protocol version ", LoadLE16(p + 4),
                     " (this build speaks ", kProtocolVersion, ")"));
  }
  const uint32_t want_crc = Crc32c(p, kChecksumOffset);
  if (LoadLE32(p + kChecksumOffset) != want_crc) {
    return absl::DataLossError("wire header checksum mismatch");
  }
  if (!IsKnownMessageKind(p[6])) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown message kind ", p[6]));
  }
  if ((p[7] & ~kKnownFlags) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown header flags ", p[7]));
  }
  if (p[57] != 0 || p[58] != 0 || p[59] != 0) {
    return absl::InvalidArgumentError("reserved header bytes are not zero");
  }
  WireHeader h;
  h.kind = static_cast<MessageKind>(p[6]);
  h.flags = p[7];
  h.job_id = LoadLE64(p + 8);
  h.sender_rank = LoadLE32(p + 16);
  h.layer = LoadLE32(p + 20);
  h.chunk = LoadLE32(p + 24);
  h.clock = LoadLE32(p + 28);
  h.version = LoadLE64(p + 32);
  h.request_id = LoadLE64(p + 40);
  h.payload_bytes = LoadLE32(p + 48);
  h.element_count = LoadLE32(p + 52);
  h.codec = p[56];
  if (h.payload_bytes > limits.max_payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload of ", h.payload_bytes, " bytes exceeds the limit of ",
                     limits.max_payload_bytes));
  }
  if (h.is_reply() && h.expects_reply()) {
    return absl::InvalidArgumentError("a reply cannot expect a reply");
  }
  return h;
}

absl::Status ValidateFrame(const WireHeader& header, size_t payload_bytes) {
  if (payload_bytes != header.payload_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("payload is ", payload_bytes, " bytes but the header says ",
                     header.payload_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<WireHeader> ValidateIncoming(unsigned am_id,
                                            absl::Span<const uint8_t> header,
                                            size_t payload_bytes,
                                            const WireLimits& limits,
                                            uint64_t job_id) {
  absl::StatusOr<WireHeader> decoded = DecodeHeader(header, limits);
  if (!decoded.ok()) return decoded;
  if (static_cast<unsigned>(decoded->kind) != am_id) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AM id ", am_id, " carries a ", MessageKindName(decoded->kind),
        " header"));
  }
  absl::Status frame = ValidateFrame(*decoded, payload_bytes);
  if (!frame.ok()) return frame;
  if (decoded->job_id != job_id) {
    return absl::PermissionDeniedError(absl::StrCat(
        "message for job ", decoded->job_id, ", this is job ", job_id));
  }
  return decoded;
}

std::string EncodeErrorPayload(const absl::Status& status) {
  const absl::string_view message =
      status.message().substr(0, kMaxErrorMessageBytes);
  std::string out(8 + message.size(), '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  StoreLE32(p, static_cast<uint32_t>(status.code()));
  StoreLE32(p + 4, static_cast<uint32_t>(message.size()));
  std::memcpy(p + 8, message.data(), message.size());
  return out;
}

absl::Status DecodeErrorPayload(absl::Span<const uint8_t> payload,
                                absl::Status* remote) {
  if (payload.size() < 8) {
    return absl::InvalidArgumentError("ERROR payload shorter than 8 bytes");
  }
  const uint32_t code = LoadLE32(payload.data());
  const uint32_t length = LoadLE32(payload.data() + 4);
  if (code == 0 || code > static_cast<uint32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::InvalidArgumentError(absl::StrCat("ERROR payload code ", code));
  }
  if (length > kMaxErrorMessageBytes || length != payload.size() - 8) {
    return absl::InvalidArgumentError("ERROR payload length mismatch");
  }
  *remote = absl::Status(
      static_cast<absl::StatusCode>(code),
      absl::string_view(reinterpret_cast<const char*>(payload.data() + 8),
                        length));
  return absl::OkStatus();
}

}  // namespace leeway
