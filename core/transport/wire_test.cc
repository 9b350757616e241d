#include "core/transport/wire.h"

#include <cstring>
#include <vector>

#include "catch2/catch.hpp"
#include "core/common/crc32c.h"
#include "core/common/little_endian.h"

namespace leeway {
namespace {

WireHeader SampleHeader() {
  WireHeader h;
  h.kind = MessageKind::kPush;
  h.flags = kFlagExpectsReply;
  h.job_id = 0x0123456789abcdefULL;
  h.sender_rank = 3;
  h.layer = 17;
  h.chunk = 2;
  h.clock = 99;
  h.version = 1ULL << 40;
  h.request_id = 77;
  h.payload_bytes = 4096;
  h.element_count = 1024;
  h.codec = 5;
  return h;
}

std::vector<uint8_t> Encoded(const WireHeader& h) {
  std::vector<uint8_t> bytes(kWireHeaderSize);
  EncodeHeader(h, bytes.data());
  return bytes;
}

// Re-seals a header after a test edits a field, so that only that field is
// wrong.
void Reseal(std::vector<uint8_t>* bytes);

TEST_CASE("wire header round-trips every field") {
  const WireHeader h = SampleHeader();
  auto decoded = DecodeHeader(Encoded(h), WireLimits{});
  REQUIRE(decoded.ok());
  CHECK(decoded->kind == h.kind);
  CHECK(decoded->flags == h.flags);
  CHECK(decoded->job_id == h.job_id);
  CHECK(decoded->sender_rank == h.sender_rank);
  CHECK(decoded->layer == h.layer);
  CHECK(decoded->chunk == h.chunk);
  CHECK(decoded->clock == h.clock);
  CHECK(decoded->version == h.version);
  CHECK(decoded->request_id == h.request_id);
  CHECK(decoded->payload_bytes == h.payload_bytes);
  CHECK(decoded->element_count == h.element_count);
  CHECK(decoded->codec == h.codec);
  CHECK(ValidateFrame(*decoded, 4096).ok());
}

TEST_CASE("wire header is little-endian at fixed offsets") {
  const auto bytes = Encoded(SampleHeader());
  CHECK(std::memcmp(bytes.data(), "LWAY", 4) == 0);
  CHECK(bytes[4] == 1);
  CHECK(bytes[5] == 0);
  CHECK(bytes[6] == static_cast<uint8_t>(MessageKind::kPush));
  CHECK(bytes[8] == 0xef);
  CHECK(bytes[15] == 0x01);
  CHECK(bytes[20] == 17);
}

TEST_CASE("wire header rejects bad input with a clear error") {
  WireLimits limits;
  limits.max_payload_bytes = 1 << 20;
  const auto good = Encoded(SampleHeader());

  SECTION("truncated") {
    auto status = DecodeHeader(absl::MakeConstSpan(good).first(63), limits);
    CHECK(status.status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("too long") {
    auto longer = good;
    longer.push_back(0);
    CHECK(!DecodeHeader(longer, limits).ok());
  }
  SECTION("wrong magic") {
    auto bad = good;
    bad[0] = 'X';
    Reseal(&bad);
    CHECK(DecodeHeader(bad, limits).status().message().find("magic") !=
          std::string::npos);
  }
  SECTION("wrong version") {
    auto bad = good;
    bad[4] = 2;
    Reseal(&bad);
    CHECK(DecodeHeader(bad, limits).status().message().find("version") !=
          std::string::npos);
  }
  SECTION("checksum") {
    auto bad = good;
    bad[24] ^= 1;  // chunk id flipped, checksum not updated
    CHECK(DecodeHeader(bad, limits).status().code() ==
          absl::StatusCode::kDataLoss);
  }
  SECTION("unknown kind") {
    for (uint8_t kind : {0, 10, 200}) {
      auto bad = good;
      bad[6] = kind;
      Reseal(&bad);
      CHECK(DecodeHeader(bad, limits).status().message().find("kind") !=
            std::string::npos);
    }
  }
  SECTION("unknown flags and reserved bytes") {
    auto bad = good;
    bad[7] = 0x80;
    Reseal(&bad);
    CHECK(!DecodeHeader(bad, limits).ok());
    bad = good;
    bad[58] = 1;
    Reseal(&bad);
    CHECK(!DecodeHeader(bad, limits).ok());
  }
  SECTION("payload over the limit") {
    WireHeader h = SampleHeader();
    h.payload_bytes = limits.max_payload_bytes + 1;
    CHECK(DecodeHeader(Encoded(h), limits).status().message().find("limit") !=
          std::string::npos);
  }
  SECTION("payload length differs from the header") {
    auto decoded = DecodeHeader(good, limits);
    REQUIRE(decoded.ok());
    CHECK(!ValidateFrame(*decoded, 4095).ok());
    CHECK(!ValidateFrame(*decoded, 4097).ok());
  }
}

TEST_CASE("ERROR payloads round-trip and reject bad lengths") {
  const auto status = absl::PermissionDeniedError("no HELLO yet");
  const std::string bytes = EncodeErrorPayload(status);
  auto span = absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  absl::Status remote;
  REQUIRE(DecodeErrorPayload(span, &remote).ok());
  CHECK(remote == status);
  CHECK(!DecodeErrorPayload(span.first(7), &remote).ok());
  CHECK(!DecodeErrorPayload(span.first(bytes.size() - 1), &remote).ok());
  std::vector<uint8_t> zero_code(bytes.begin(), bytes.end());
  zero_code[0] = 0;
  CHECK(!DecodeErrorPayload(zero_code, &remote).ok());
}

void Reseal(std::vector<uint8_t>* bytes) {
  StoreLE32(bytes->data() + 60, Crc32c(bytes->data(), 60));
}

}  // namespace
}  // namespace leeway
