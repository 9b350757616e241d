#include "core/transport/pull_batch.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "core/common/little_endian.h"
#include "core/transport/wire.h"

namespace leeway {
namespace {

TEST_CASE("a pull batch round-trips its entries") {
  std::vector<uint8_t> batch;
  AppendPullBatchEntry({3, 1, 17}, &batch);
  AppendPullBatchEntry({4, 0, ~uint64_t{0}}, &batch);
  auto entries = DecodePullBatch(batch, 2);
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 2);
  CHECK((*entries)[0].layer == 3);
  CHECK((*entries)[0].chunk == 1);
  CHECK((*entries)[0].version == 17);
  CHECK((*entries)[1].version == ~uint64_t{0});
  CHECK_FALSE(DecodePullBatch(batch, 3).ok());
  CHECK_FALSE(DecodePullBatch(batch, 1).ok());
  CHECK_FALSE(DecodePullBatch({}, 0).ok());
  CHECK(DecodePullBatch(std::vector<uint8_t>(16 * 4097), 4097)
            .status()
            .message()
            .find("4097 entries") != absl::string_view::npos);
}

TEST_CASE("a pull batch reply carries each entry's payload or refusal") {
  const std::vector<uint8_t> dense = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<uint8_t> reply;
  AppendPullBatchResult(absl::OkStatus(), 12, 0, dense, &reply);
  AppendPullBatchResult(absl::OkStatus(), 12, 0, {}, &reply);  // not modified
  AppendPullBatchResult(absl::DeadlineExceededError("waited too long"), 99, 3, dense, &reply);
  AppendPullBatchResult(absl::OkStatus(), 40, 5, {7}, &reply);
  auto results = DecodePullBatchReply(reply, 4);
  REQUIRE(results.ok());
  REQUIRE(results->size() == 4);
  CHECK((*results)[0].status.ok());
  CHECK((*results)[0].version == 12);
  CHECK(std::vector<uint8_t>((*results)[0].payload.begin(), (*results)[0].payload.end()) == dense);
  CHECK((*results)[1].payload.empty());
  CHECK((*results)[2].status == absl::DeadlineExceededError("waited too long"));
  CHECK((*results)[2].version == 0);
  CHECK((*results)[2].payload.empty());
  CHECK((*results)[3].codec == 5);
  CHECK((*results)[3].payload.size() == 1);
}

TEST_CASE("a malformed pull batch reply is refused, naming what is wrong") {
  std::vector<uint8_t> good;
  AppendPullBatchResult(absl::OkStatus(), 7, 1, std::vector<uint8_t>(5, 9), &good);  // 24 + 8
  AppendPullBatchResult(absl::NotFoundError("gone"), 0, 0, {}, &good);               // 24 + 8
  REQUIRE(DecodePullBatchReply(good, 2).ok());
  auto refused = [](const std::vector<uint8_t>& reply, uint32_t entries, const std::string& why) {
    auto decoded = DecodePullBatchReply(reply, entries);
    REQUIRE_FALSE(decoded.ok());
    CHECK(decoded.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(std::string(decoded.status().message()).find(why) != std::string::npos);
  };
  refused(good, 3, "entry 2: the reply ends in its header");
  refused(good, 1, "32 bytes after them");
  refused(good, 0, "0 entries");
  std::vector<uint8_t> bad = good;
  StoreLE32(bad.data() + 12, 1000);  // a body past the end
  refused(bad, 2, "entry 0 of 1000 bytes overruns");
  bad = good;
  bad[24 + 6] = 1;  // the body's padding
  refused(bad, 2, "entry 0: nonzero padding");
  bad = good;
  bad[20] = 1;  // reserved
  refused(bad, 2, "entry 0: nonzero reserved byte");
  bad = good;
  StoreLE32(bad.data() + 32 + 8, 40);  // no such status code
  refused(bad, 2, "entry 1: status code 40");
  bad = good;
  StoreLE64(bad.data() + 32, 3);  // a refusal with a version
  refused(bad, 2, "entry 1: refusal 5 with version 3");
  bad = good;
  StoreLE32(bad.data() + 32 + 12, 2000);  // a refusal's message over the limit
  refused(bad, 2, "2000-byte message");
  std::vector<uint8_t> truncated(good.begin(), good.end() - 8);
  refused(truncated, 2, "entry 1 of 4 bytes overruns");
}

}  // namespace
}  // namespace leeway
