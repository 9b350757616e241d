#include "core/transport/hello.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/common/little_endian.h"

namespace leeway {
namespace {

Mac Proof(absl::string_view label, absl::string_view token, uint64_t job_id,
          const Nonce& first, const Nonce& second) {
  std::string message(label);
  uint8_t job[8];
  StoreLE64(job, job_id);
  message.append(reinterpret_cast<const char*>(job), sizeof(job));
  message.append(reinterpret_cast<const char*>(first.data()), first.size());
  message.append(reinterpret_cast<const char*>(second.data()), second.size());
  Mac mac{};
  unsigned int length = 0;
  HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(),
       mac.data(), &length);
  return mac;
}

}  // namespace

std::string EncodeHello(const HelloPayload& hello) {
  std::string out(kHelloFixedBytes, '\0');
  auto* p = reinterpret_cast<uint8_t*>(out.data());
  p[0] = static_cast<uint8_t>(hello.stage);
  StoreLE32(p + 4, static_cast<uint32_t>(hello.address.size()));
  std::memcpy(p + 8, hello.nonce.data(), kNonceBytes);
  std::memcpy(p + 8 + kNonceBytes, hello.mac.data(), kMacBytes);
  out += hello.address;
  return out;
}

absl::StatusOr<HelloPayload> DecodeHello(absl::Span<const uint8_t> payload) {
  if (payload.size() < kHelloFixedBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HELLO payload is ", payload.size(), " bytes, want at least ",
        kHelloFixedBytes));
  }
  const uint32_t address_bytes = LoadLE32(payload.data() + 4);
  if (address_bytes > kMaxHelloAddressBytes ||
      payload.size() != kHelloFixedBytes + address_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "HELLO address of ", address_bytes, " bytes in a payload of ",
        payload.size()));
  }
  const uint8_t stage = payload[0];
  if (stage < static_cast<uint8_t>(HelloStage::kClientHello) ||
      stage > static_cast<uint8_t>(HelloStage::kWelcome)) {
    return absl::InvalidArgumentError(absl::StrCat("HELLO stage ", stage));
  }
  for (int i = 1; i < 4; ++i) {
    if (payload[i] != 0) {
      return absl::InvalidArgumentError("HELLO reserved bytes are not zero");
    }
  }
  HelloPayload hello;
  hello.stage = static_cast<HelloStage>(stage);
  std::memcpy(hello.nonce.data(), payload.data() + 8, kNonceBytes);
  std::memcpy(hello.mac.data(), payload.data() + 8 + kNonceBytes, kMacBytes);
  hello.address.assign(
      reinterpret_cast<const char*>(payload.data() + kHelloFixedBytes),
      address_bytes);
  if (!hello.address.empty() && hello.stage != HelloStage::kClientHello) {
    return absl::InvalidArgumentError("only HELLO stage 1 carries an address");
  }
  return hello;
}

absl::StatusOr<Nonce> RandomNonce() {
  Nonce nonce{};
  if (RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) != 1) {
    return absl::InternalError("RAND_bytes failed");
  }
  return nonce;
}

Mac ServerProof(absl::string_view token, uint64_t job_id,
                const Nonce& client_nonce, const Nonce& server_nonce) {
  return Proof("leeway-server-v1", token, job_id, client_nonce, server_nonce);
}

Mac ClientProof(absl::string_view token, uint64_t job_id,
                const Nonce& server_nonce, const Nonce& client_nonce) {
  return Proof("leeway-client-v1", token, job_id, server_nonce, client_nonce);
}

bool MacEqual(const Mac& a, const Mac& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace leeway
