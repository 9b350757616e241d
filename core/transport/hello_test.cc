#include "core/transport/hello.h"

#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

TEST_CASE("HELLO payload round-trips and rejects malformed bytes") {
  HelloPayload hello;
  hello.stage = HelloStage::kChallenge;
  hello.nonce.fill(7);
  hello.mac.fill(9);
  const std::string bytes = EncodeHello(hello);
  std::vector<uint8_t> raw(bytes.begin(), bytes.end());
  auto decoded = DecodeHello(raw);
  REQUIRE(decoded.ok());
  CHECK(decoded->stage == HelloStage::kChallenge);
  CHECK(decoded->nonce == hello.nonce);
  CHECK(decoded->mac == hello.mac);

  CHECK(!DecodeHello(absl::MakeConstSpan(raw).first(raw.size() - 1)).ok());
  auto bad_stage = raw;
  bad_stage[0] = 9;
  CHECK(!DecodeHello(bad_stage).ok());
  auto bad_reserved = raw;
  bad_reserved[3] = 1;
  CHECK(!DecodeHello(bad_reserved).ok());
  // An address length that disagrees with the payload.
  auto bad_length = raw;
  bad_length[4] = 5;
  CHECK(!DecodeHello(bad_length).ok());
  // Only stage 1 may carry an address.
  HelloPayload with_address = hello;
  with_address.address = "worker-address";
  const std::string stage2 = EncodeHello(with_address);
  CHECK(!DecodeHello(std::vector<uint8_t>(stage2.begin(), stage2.end())).ok());
  with_address.stage = HelloStage::kClientHello;
  const std::string stage1 = EncodeHello(with_address);
  auto decoded1 = DecodeHello(std::vector<uint8_t>(stage1.begin(), stage1.end()));
  REQUIRE(decoded1.ok());
  CHECK(decoded1->address == "worker-address");
}

TEST_CASE("proofs depend on token, job, nonces and role") {
  auto a = RandomNonce();
  auto b = RandomNonce();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a != *b);
  const Mac server = ServerProof("secret", 1, *a, *b);
  CHECK(MacEqual(server, ServerProof("secret", 1, *a, *b)));
  CHECK(!MacEqual(server, ServerProof("Secret", 1, *a, *b)));
  CHECK(!MacEqual(server, ServerProof("secret", 2, *a, *b)));
  CHECK(!MacEqual(server, ServerProof("secret", 1, *b, *a)));
  // A server proof can never be replayed as a client proof.
  CHECK(!MacEqual(server, ClientProof("secret", 1, *a, *b)));
}

}  // namespace
}  // namespace leeway
