#include "server/checkpoint.h"

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "tests/subprocess.h"

namespace leeway {
namespace {

CheckpointContents Sample(float base) {
  CheckpointContents c;
  ChunkRecord sgd;
  sgd.info = {1, 0, 0, 5};
  sgd.state = {7, {base, 1, 2, 3, 4}, {}};
  ChunkRecord adam;
  adam.info = {2, 3, 1024, 2};
  adam.optimizer.kind = OptimizerKind::kAdam;
  adam.optimizer.learning_rate = 0.5f;
  adam.state = {9, {base, -1}, {0.1f, 0.2f, 0.3f, 0.4f}};
  c.chunks = {sgd, adam};
  c.clocks = {{0, 12}, {3, 10}};
  return c;
}

void CheckSame(const CheckpointContents& a, const CheckpointContents& b) {
  REQUIRE(a.chunks.size() == b.chunks.size());
  for (size_t i = 0; i < a.chunks.size(); ++i) {
    const ChunkRecord& x = a.chunks[i];
    const ChunkRecord& y = b.chunks[i];
    CHECK(x.info.layer == y.info.layer);
    CHECK(x.info.chunk == y.info.chunk);
    CHECK(x.info.offset == y.info.offset);
    CHECK(x.info.elements == y.info.elements);
    CHECK(x.optimizer.kind == y.optimizer.kind);
    CHECK(x.optimizer.learning_rate == y.optimizer.learning_rate);
    CHECK(x.state.version == y.state.version);
    CHECK(x.state.params == y.state.params);
    CHECK(x.state.optimizer_state == y.state.optimizer_state);
  }
  REQUIRE(a.clocks.size() == b.clocks.size());
  for (size_t i = 0; i < a.clocks.size(); ++i) {
    CHECK(a.clocks[i].rank == b.clocks[i].rank);
    CHECK(a.clocks[i].clock == b.clocks[i].clock);
  }
}

std::vector<char> Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void Spit(const std::string& path, const std::vector<char>& bytes, size_t n) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), n);
}

TEST_CASE("a checkpoint round-trips") {
  CheckpointStore store(testing::MakeTempDir("ckpt"), 3);
  CHECK(store.ReadNewest().status().code() == absl::StatusCode::kNotFound);
  auto seq = store.Write(Sample(5));
  REQUIRE(seq.ok());
  CHECK(*seq == 1);
  uint64_t read_seq = 0;
  auto back = store.ReadNewest(&read_seq);
  REQUIRE(back.ok());
  CHECK(read_seq == 1);
  CheckSame(*back, Sample(5));
}

TEST_CASE("a torn or corrupt newest checkpoint falls back to the previous") {
  CheckpointStore store(testing::MakeTempDir("ckpt"), 3);
  REQUIRE(store.Write(Sample(1)).ok());
  REQUIRE(store.Write(Sample(2)).ok());
  for (const std::string& path : {store.ManifestPath(2), store.DataPath(2)}) {
    const std::vector<char> whole = Slurp(path);
    REQUIRE(!whole.empty());
    for (size_t cut = 0; cut < whole.size(); ++cut) {
      INFO(path << " cut at " << cut);
      Spit(path, whole, cut);
      uint64_t seq = 0;
      auto back = store.ReadNewest(&seq);
      REQUIRE(back.ok());
      REQUIRE(seq == 1);
      CHECK(back->chunks[0].state.params[0] == 1.0f);
    }
    // A flipped bit anywhere is caught by a checksum.
    for (size_t at = 0; at < whole.size(); at += 7) {
      std::vector<char> flipped = whole;
      flipped[at] ^= 0x10;
      Spit(path, flipped, flipped.size());
      uint64_t seq = 0;
      REQUIRE(store.ReadNewest(&seq).ok());
      REQUIRE(seq == 1);
    }
    Spit(path, whole, whole.size());
    uint64_t seq = 0;
    REQUIRE(store.ReadNewest(&seq).ok());
    CHECK(seq == 2);
  }
  // A missing data file, too.
  REQUIRE(unlink(store.DataPath(2).c_str()) == 0);
  uint64_t seq = 0;
  REQUIRE(store.ReadNewest(&seq).ok());
  CHECK(seq == 1);
}

TEST_CASE("only the newest checkpoints are kept") {
  CheckpointStore store(testing::MakeTempDir("ckpt"), 2);
  for (int i = 1; i <= 5; ++i) REQUIRE(store.Write(Sample(float(i))).ok());
  CHECK(store.List() == std::vector<uint64_t>{5, 4});
  CHECK(access(store.DataPath(3).c_str(), F_OK) != 0);
  uint64_t seq = 0;
  auto back = store.ReadNewest(&seq);
  REQUIRE(back.ok());
  CHECK(seq == 5);
  CHECK(back->chunks[1].state.params[0] == 5.0f);
}

}  // namespace
}  // namespace leeway
