// The data-plane wire format: a fixed 64-byte little-endian header that
// travels as the UCX active-message header, followed by the payload.
//
// Layout (byte offsets):
//    0 u32 magic "LWAY"      4 u16 protocol version   6 u8 kind   7 u8 flags
//    8 u64 job id           16 u32 sender rank       20 u32 layer
//   24 u32 chunk            28 u32 clock             32 u64 version
//   40 u64 request id       48 u32 payload bytes     52 u32 element count
//   56 u8  codec            57 u8[3] reserved (zero) 60 u32 CRC-32C of 0..59
//
// DecodeHeader validates everything it can see (size, magic, version,
// checksum, kind, flags, reserved bytes, payload size against the limit)
// before any field is used; ValidateFrame then checks the header against the
// payload that actually arrived. Pure functions, thread-safe.
#ifndef LEEWAY_CORE_TRANSPORT_WIRE_H_
#define LEEWAY_CORE_TRANSPORT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

// One UCX active-message id per kind; the header repeats it.
enum class MessageKind : uint8_t {
  kHello = 1,      // handshake (hello.h); nothing else is accepted before it
  kPush = 2,       // worker -> server: a compressed gradient chunk
  kPull = 3,       // worker -> server: request for a chunk's parameters
  kPullReply = 4,  // server -> worker: parameters (dense or delta)
  kClock = 5,      // worker -> server: CLOCK(c+1, pushes sent)
  kError = 6,      // either way: a Status in reply to a bad message
  kKeepalive = 7,  // either way: liveness probe and its reply
  kPushBatch = 8,  // worker -> server: several small PUSHes (push_batch.h)
  kPullBatch = 9,  // worker -> server: several small PULLs (pull_batch.h)
};
constexpr int kMinMessageKind = 1;
constexpr int kMaxMessageKind = 9;

const char* MessageKindName(MessageKind kind);
bool IsKnownMessageKind(int kind);

constexpr uint32_t kWireMagic = 0x5941574Cu;  // "LWAY" in little-endian order
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kWireHeaderSize = 64;

// Header flags.
constexpr uint8_t kFlagReply = 1u << 0;          // answers request_id
constexpr uint8_t kFlagExpectsReply = 1u << 1;   // sender waits for a reply
constexpr uint8_t kFlagInitial = 1u << 2;  // PUSH: the chunk's initial values
constexpr uint8_t kKnownFlags = kFlagReply | kFlagExpectsReply | kFlagInitial;

struct WireHeader {
  MessageKind kind = MessageKind::kKeepalive;
  uint8_t flags = 0;
  uint64_t job_id = 0;
  uint32_t sender_rank = 0;
  uint32_t layer = 0;
  uint32_t chunk = 0;
  uint32_t clock = 0;
  uint64_t version = 0;
  uint64_t request_id = 0;
  uint32_t payload_bytes = 0;
  uint32_t element_count = 0;
  uint8_t codec = 0;

  bool is_reply() const { return (flags & kFlagReply) != 0; }
  bool expects_reply() const { return (flags & kFlagExpectsReply) != 0; }
  std::string DebugString() const;
};

struct WireLimits {
  uint32_t max_payload_bytes = 64u << 20;
};

// Writes exactly kWireHeaderSize bytes into `out`, checksum included.
void EncodeHeader(const WireHeader& header, uint8_t* out);

// Parses and validates a header; any violation is InvalidArgument (or
// DataLoss for a bad checksum) naming the field.
absl::StatusOr<WireHeader> DecodeHeader(absl::Span<const uint8_t> bytes,
                                        const WireLimits& limits);

// Checks a decoded header against the payload length that arrived.
absl::Status ValidateFrame(const WireHeader& header, size_t payload_bytes);

// Everything a receiver checks before using an incoming active message:
// the header (DecodeHeader), that the AM id matches its kind, the payload
// length, and the job id. The transport and the fuzzer share it.
absl::StatusOr<WireHeader> ValidateIncoming(unsigned am_id,
                                            absl::Span<const uint8_t> header,
                                            size_t payload_bytes,
                                            const WireLimits& limits,
                                            uint64_t job_id);

// ERROR payloads: a status code and a short message (at most
// kMaxErrorMessageBytes). Decoding validates the lengths.
constexpr size_t kMaxErrorMessageBytes = 1024;
std::string EncodeErrorPayload(const absl::Status& status);
// Sets *remote to the status the peer sent; returns an error when the
// payload itself is malformed.
absl::Status DecodeErrorPayload(absl::Span<const uint8_t> payload,
                                absl::Status* remote);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_WIRE_H_
