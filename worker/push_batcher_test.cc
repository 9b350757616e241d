#include "worker/push_batcher.h"

#include <vector>

#include "catch2/catch.hpp"
#include "core/transport/push_batch.h"

namespace leeway {
namespace {

// Servers are only compared, never used: any distinct addresses do.
int server_storage[2];
ServerLink* const kServerA = reinterpret_cast<ServerLink*>(&server_storage[0]);
ServerLink* const kServerB = reinterpret_cast<ServerLink*>(&server_storage[1]);

const absl::Time kStart = absl::FromUnixSeconds(1000);

PushPart Part(uint32_t layer) { return PushPart{TicketGroup::Create(1), layer}; }

// The (layer, chunk, payload size) of each entry of `batch`.
std::vector<std::vector<uint32_t>> Entries(const PushBatch& batch) {
  auto decoded = DecodePushBatch(batch.bytes, static_cast<uint32_t>(batch.parts.size()));
  REQUIRE(decoded.ok());
  std::vector<std::vector<uint32_t>> out;
  for (const PushBatchEntry& e : *decoded) {
    out.push_back({e.layer, e.chunk, static_cast<uint32_t>(e.payload.size())});
  }
  return out;
}

TEST_CASE("small pushes gather per server, in order, until taken") {
  PushBatcher batcher(PushBatcherOptions{});
  const std::vector<uint8_t> payload(100, 7);
  CHECK(batcher.Add(kServerA, 4, 10, 0, payload, Part(10), kStart).empty());
  CHECK(batcher.Add(kServerB, 4, 11, 0, payload, Part(11), kStart).empty());
  CHECK(batcher
            .Add(kServerA, 4, 12, 3, absl::MakeConstSpan(payload).first(9), Part(12),
                 kStart + absl::Milliseconds(1))
            .empty());
  CHECK_FALSE(batcher.empty());
  std::vector<PushBatch> taken = batcher.Take();
  CHECK(batcher.empty());
  REQUIRE(taken.size() == 2);
  CHECK(taken[0].server == kServerA);
  CHECK(taken[0].clock == 4);
  CHECK(Entries(taken[0]) == std::vector<std::vector<uint32_t>>{{10, 0, 100}, {12, 3, 9}});
  CHECK(taken[0].parts[0].layer == 10);
  CHECK(taken[0].parts[1].layer == 12);
  CHECK(taken[1].server == kServerB);
  CHECK(Entries(taken[1]) == std::vector<std::vector<uint32_t>>{{11, 0, 100}});
  CHECK(batcher.Take().empty());
}

TEST_CASE("a batch goes out when it is full or its clock has passed") {
  PushBatcherOptions options;
  options.max_batch_bytes = 200;
  PushBatcher batcher(options);
  const std::vector<uint8_t> payload(64, 1);  // 80 bytes an entry
  CHECK(batcher.Add(kServerA, 1, 0, 0, payload, Part(0), kStart).empty());
  CHECK(batcher.Add(kServerA, 1, 0, 1, payload, Part(0), kStart).empty());
  SECTION("a third entry would overflow it: the two go, the third waits") {
    std::vector<PushBatch> ready = batcher.Add(kServerA, 1, 0, 2, payload, Part(0), kStart);
    REQUIRE(ready.size() == 1);
    CHECK(Entries(ready[0]) == std::vector<std::vector<uint32_t>>{{0, 0, 64}, {0, 1, 64}});
    std::vector<PushBatch> rest = batcher.Take();
    REQUIRE(rest.size() == 1);
    CHECK(Entries(rest[0]) == std::vector<std::vector<uint32_t>>{{0, 2, 64}});
  }
  SECTION("an entry that fills it sends it at once") {
    std::vector<PushBatch> ready =
        batcher.Add(kServerA, 1, 0, 2, absl::MakeConstSpan(payload).first(24), Part(0), kStart);
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].bytes.size() == 200);
    CHECK(ready[0].parts.size() == 3);
    CHECK(batcher.empty());
  }
  SECTION("a push of the next clock sends the last clock's batch first") {
    std::vector<PushBatch> ready = batcher.Add(kServerA, 2, 0, 0, payload, Part(0), kStart);
    REQUIRE(ready.size() == 1);
    CHECK(ready[0].clock == 1);
    CHECK(ready[0].parts.size() == 2);
    std::vector<PushBatch> rest = batcher.Take();
    REQUIRE(rest.size() == 1);
    CHECK(rest[0].clock == 2);
  }
}

TEST_CASE("only batches opened before a time are taken by age") {
  PushBatcher batcher(PushBatcherOptions{});
  const std::vector<uint8_t> payload(8, 1);
  (void)batcher.Add(kServerA, 0, 0, 0, payload, Part(0), kStart);
  (void)batcher.Add(kServerB, 0, 1, 0, payload, Part(1), kStart + absl::Milliseconds(5));
  (void)batcher.Add(kServerA, 0, 2, 0, payload, Part(2), kStart + absl::Milliseconds(6));
  std::vector<PushBatch> old = batcher.TakeOpenedBefore(kStart + absl::Milliseconds(5));
  REQUIRE(old.size() == 1);
  CHECK(old[0].server == kServerA);
  CHECK(old[0].parts.size() == 2);
  std::vector<PushBatch> rest = batcher.Take();
  REQUIRE(rest.size() == 1);
  CHECK(rest[0].server == kServerB);
}

TEST_CASE("only small payloads join batches, and none with batching off") {
  PushBatcherOptions options;
  options.max_entry_bytes = 1000;
  CHECK(PushBatcher(options).Takes(1000));
  CHECK_FALSE(PushBatcher(options).Takes(1001));
  options.max_entry_bytes = 0;
  CHECK_FALSE(PushBatcher(options).Takes(0));
}

}  // namespace
}  // namespace leeway
