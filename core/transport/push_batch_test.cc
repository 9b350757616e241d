#include "core/transport/push_batch.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "core/common/little_endian.h"
#include "core/transport/wire.h"

namespace leeway {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint8_t first) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(first + i);
  return out;
}

// Three entries: payloads of 5, 8 and 0 bytes.
std::vector<uint8_t> ThreeEntries() {
  std::vector<uint8_t> batch;
  AppendPushBatchEntry(3, 0, Bytes(5, 1), &batch);
  AppendPushBatchEntry(3, 1, Bytes(8, 100), &batch);
  AppendPushBatchEntry(7, 2, {}, &batch);
  return batch;
}

TEST_CASE("a push batch round-trips its entries, padded to 8 bytes") {
  const std::vector<uint8_t> batch = ThreeEntries();
  CHECK(batch.size() == PushBatchEntryBytes(5) + PushBatchEntryBytes(8) + PushBatchEntryBytes(0));
  CHECK(PushBatchEntryBytes(5) == 24);
  auto entries = DecodePushBatch(batch, 3);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 3);
  CHECK((*entries)[0].layer == 3);
  CHECK((*entries)[0].chunk == 0);
  CHECK(std::vector<uint8_t>((*entries)[0].payload.begin(), (*entries)[0].payload.end()) ==
        Bytes(5, 1));
  CHECK((*entries)[1].chunk == 1);
  CHECK(std::vector<uint8_t>((*entries)[1].payload.begin(), (*entries)[1].payload.end()) ==
        Bytes(8, 100));
  CHECK((*entries)[2].layer == 7);
  CHECK((*entries)[2].payload.empty());
  // Payloads start 8-byte aligned within the batch.
  CHECK(((*entries)[1].payload.data() - batch.data()) % 8 == 0);
}

TEST_CASE("a malformed push batch is refused whole, naming what is wrong") {
  const std::vector<uint8_t> good = ThreeEntries();
  auto refused = [](const std::vector<uint8_t>& batch, uint32_t entries, const std::string& why) {
    auto decoded = DecodePushBatch(batch, entries);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(decoded.status().message()).find(why) != std::string::npos);
  };
  SECTION("entry counts") {
    refused(good, 0, "0 entries");
    refused(good, kMaxPushBatchEntries + 1, "4097 entries");
    refused(good, 4, "entry 3: the batch ends in its header");
    refused(good, 2, "16 bytes after them");
  }
  SECTION("a payload longer than what is left") {
    std::vector<uint8_t> bad = good;
    StoreLE32(bad.data() + 8, 1000);
    refused(bad, 3, "entry 0 of 1000 bytes overruns");
    StoreLE32(bad.data() + 8, 0xFFFFFFFFu);
    refused(bad, 3, "overruns");
  }
  SECTION("a truncated batch") {
    std::vector<uint8_t> bad(good.begin(), good.end() - 20);
    refused(bad, 3, "entry 1 of 8 bytes overruns");
  }
  SECTION("nonzero reserved field or padding") {
    std::vector<uint8_t> bad = good;
    bad[12] = 1;
    refused(bad, 3, "entry 0: nonzero reserved field");
    bad = good;
    bad[16 + 5] = 9;  // the first payload's padding
    refused(bad, 3, "entry 0: nonzero padding");
  }
}

TEST_CASE("a push batch reply carries each entry's version or status") {
  std::vector<absl::StatusOr<uint64_t>> results = {
      uint64_t{12}, absl::NotFoundError("no chunk 9 of layer 3"), uint64_t{0},
      absl::InvalidArgumentError(std::string(5000, 'x'))};
  const std::vector<uint8_t> reply = EncodePushBatchReply(results);
  auto decoded = DecodePushBatchReply(reply, 4);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->size() == 4);
  CHECK(*(*decoded)[0] == 12);
  CHECK((*decoded)[1].status() == absl::NotFoundError("no chunk 9 of layer 3"));
  CHECK(*(*decoded)[2] == 0);
  CHECK((*decoded)[3].status().code() == absl::StatusCode::kInvalidArgument);
  CHECK((*decoded)[3].status().message().size() == kMaxErrorMessageBytes);
}

TEST_CASE("a malformed push batch reply is refused") {
  const std::vector<uint8_t> good =
      EncodePushBatchReply({uint64_t{5}, absl::NotFoundError("gone")});
  auto refused = [](const std::vector<uint8_t>& reply, uint32_t entries, const std::string& why) {
    auto decoded = DecodePushBatchReply(reply, entries);
    REQUIRE_FALSE(decoded.ok());
    CHECK(std::string(decoded.status().message()).find(why) != std::string::npos);
  };
  REQUIRE(DecodePushBatchReply(good, 2).ok());
  refused(good, 3, "entry 2: the reply ends in its header");
  refused(good, 1, "bytes after them");
  refused(good, 0, "0 entries");
  std::vector<uint8_t> bad = good;
  StoreLE32(bad.data() + 8, 17);  // no such status code
  refused(bad, 2, "status code 17");
  bad = good;
  StoreLE32(bad.data() + 12, 3);  // OK with a message
  refused(bad, 2, "code 0 with version 5");
  bad = good;
  StoreLE64(bad.data() + 16, 1);  // an error with a version
  refused(bad, 2, "entry 1: code 5 with version 1");
  bad = good;
  StoreLE32(bad.data() + 16 + 12, 2000);  // message over the limit
  refused(bad, 2, "2000-byte message");
  bad = good;
  StoreLE32(bad.data() + 16 + 12, 900);  // message past the end
  refused(bad, 2, "overruns");
  bad = good;
  bad.back() = 1;  // the message's padding
  refused(bad, 2, "nonzero padding");
}

}  // namespace
}  // namespace leeway
