// The HELLO handshake's payloads and proofs (mutual, token-based).
//
//   client -> server  HELLO stage 1: client nonce [+ client worker address]
//   server -> client  HELLO stage 2: server nonce, ServerProof
//   client -> server  HELLO stage 3: ClientProof
//   server -> client  HELLO stage 4: welcome
//
// Proofs are HMAC-SHA256 keyed with the cluster token over a role label, the
// job id and both nonces, so a peer without the token (or from another job)
// can neither pass nor replay a handshake. A client that connected by worker
// address sends its own address in stage 1: the server replies over an
// endpoint of its own to it (transport.h says why). Pure functions except
// RandomNonce (OpenSSL's CSPRNG); all thread-safe.
#ifndef LEEWAY_CORE_TRANSPORT_HELLO_H_
#define LEEWAY_CORE_TRANSPORT_HELLO_H_

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace leeway {

constexpr size_t kNonceBytes = 32;
constexpr size_t kMacBytes = 32;
constexpr size_t kHelloFixedBytes = 8 + kNonceBytes + kMacBytes;
constexpr size_t kMaxHelloAddressBytes = 8192;

using Nonce = std::array<uint8_t, kNonceBytes>;
using Mac = std::array<uint8_t, kMacBytes>;

enum class HelloStage : uint8_t {
  kClientHello = 1,
  kChallenge = 2,
  kResponse = 3,
  kWelcome = 4,
};

struct HelloPayload {
  HelloStage stage = HelloStage::kClientHello;
  Nonce nonce{};
  Mac mac{};
  std::string address;  // stage 1 only; may be empty
};

std::string EncodeHello(const HelloPayload& hello);
absl::StatusOr<HelloPayload> DecodeHello(absl::Span<const uint8_t> payload);

absl::StatusOr<Nonce> RandomNonce();

Mac ServerProof(absl::string_view token, uint64_t job_id,
                const Nonce& client_nonce, const Nonce& server_nonce);
Mac ClientProof(absl::string_view token, uint64_t job_id,
                const Nonce& server_nonce, const Nonce& client_nonce);

// Constant-time comparison.
bool MacEqual(const Mac& a, const Mac& b);

}  // namespace leeway

#endif  // LEEWAY_CORE_TRANSPORT_HELLO_H_
