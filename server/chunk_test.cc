#include "server/chunk.h"

#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec.h"

namespace leeway {
namespace {

ChunkInfo Info(uint32_t elements) { return ChunkInfo{3, 1, 1000, elements}; }

OptimizerConfig Sgd(float lr = 0.5f) {
  OptimizerConfig c;
  c.learning_rate = lr;
  return c;
}

std::vector<uint8_t> Dense(const std::vector<float>& g) {
  CodecParams p;
  p.codec = CodecId::kNone;
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, p, &payload).ok());
  return payload;
}

std::vector<uint8_t> TopK(const std::vector<float>& g, float density) {
  CodecParams p;
  p.codec = CodecId::kTopK;
  p.density = density;
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, p, &payload).ok());
  return payload;
}

std::vector<float> Random(size_t n, uint64_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(n);
  for (auto& x : v) x = normal(rng);
  return v;
}

std::vector<float> Params(const Chunk& chunk) { return chunk.Snapshot().params; }

TEST_CASE("a chunk is initialized once, by the first writer") {
  Chunk chunk(Info(4), Sgd());
  CHECK(chunk.Apply(Dense({1, 1, 1, 1})).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(chunk.Read(kNoVersion).status().code() == absl::StatusCode::kUnavailable);
  CHECK_FALSE(chunk.Initialize(std::vector<float>{1, 2, 3}).ok());
  CHECK(*chunk.Initialize(std::vector<float>{1, 2, 3, 4}) == true);
  CHECK(*chunk.Initialize(std::vector<float>{9, 9, 9, 9}) == false);
  CHECK(Params(chunk) == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("pushes apply with the optimizer and bump the version") {
  Chunk chunk(Info(4), Sgd(0.5f));
  REQUIRE(chunk.Initialize(std::vector<float>{1, 2, 3, 4}).ok());
  CHECK(*chunk.Apply(Dense({2, 2, 2, 2})) == 1);
  CHECK(Params(chunk) == std::vector<float>{0, 1, 2, 3});
  CHECK(*chunk.Apply(Dense({2, 0, 0, 0}), 0.5f) == 2);  // scaled gradient
  CHECK(Params(chunk) == std::vector<float>{-0.5f, 1, 2, 3});
}

TEST_CASE("a bad push leaves the chunk untouched") {
  Chunk chunk(Info(100), Sgd());
  REQUIRE(chunk.Initialize(Random(100, 1)).ok());
  const auto before = chunk.Snapshot();
  auto wrong_size = Dense(Random(99, 2));
  auto corrupt = TopK(Random(100, 3), 0.1f);
  corrupt[corrupt.size() - 1] = 0xFF;  // a NaN value
  corrupt[corrupt.size() - 2] = 0xFF;
  for (const auto& bad : {wrong_size, corrupt, std::vector<uint8_t>{1, 2, 3}}) {
    CHECK_FALSE(chunk.Apply(bad).ok());
  }
  const auto after = chunk.Snapshot();
  CHECK(after.version == before.version);
  CHECK(after.params == before.params);
}

TEST_CASE("pulls answer not modified, a delta, or the dense chunk") {
  const uint32_t n = 4096;
  Chunk chunk(Info(n), Sgd(0.1f));
  REQUIRE(chunk.Initialize(Random(n, 1)).ok());

  auto first = chunk.Read(kNoVersion);  // nothing held: dense
  REQUIRE(first.ok());
  CHECK(first->form == PullReply::Form::kDense);
  CHECK(first->version == 0);
  std::vector<float> copy(n);
  REQUIRE(Decode(first->payload, absl::MakeSpan(copy)).ok());
  const uint64_t held = first->version;

  // Sparse pushes change few blocks: a delta brings the copy up to date.
  for (uint64_t seed = 10; seed < 13; ++seed) {
    REQUIRE(chunk.Apply(TopK(Random(n, seed), 0.01f)).ok());
  }
  auto delta = chunk.Read(held);
  REQUIRE(delta.ok());
  CHECK(delta->version == 3);
  REQUIRE(delta->form == PullReply::Form::kDelta);
  CHECK(delta->payload.size() < CompressedSize({CodecId::kNone}, n) / 2);
  std::vector<uint32_t> indices;
  std::vector<float> values;
  REQUIRE(DecodePairs(delta->payload, n, &indices, &values).ok());
  for (size_t j = 0; j < indices.size(); ++j) copy[indices[j]] = values[j];
  CHECK(copy == Params(chunk));  // bit for bit

  auto same = chunk.Read(3);
  REQUIRE(same.ok());
  CHECK(same->form == PullReply::Form::kNotModified);
  CHECK(same->payload.empty());

  // A dense push changes everything: the dense chunk is smaller than a delta.
  REQUIRE(chunk.Apply(Dense(Random(n, 20))).ok());
  auto dense = chunk.Read(3);
  REQUIRE(dense.ok());
  CHECK(dense->form == PullReply::Form::kDense);
  // A version the server never had (it restarted from an older state).
  auto unknown = chunk.Read(99);
  REQUIRE(unknown.ok());
  CHECK(unknown->form == PullReply::Form::kDense);
}

TEST_CASE("deltas from every older version reproduce the chunk") {
  const uint32_t n = 1000;
  Chunk chunk(Info(n), Sgd(0.1f));
  REQUIRE(chunk.Initialize(Random(n, 5)).ok());
  std::vector<std::vector<float>> history = {Params(chunk)};
  for (uint64_t seed = 0; seed < 8; ++seed) {
    REQUIRE(chunk.Apply(TopK(Random(n, 100 + seed), 0.005f)).ok());
    history.push_back(Params(chunk));
  }
  for (uint64_t since = 0; since < history.size(); ++since) {
    auto reply = chunk.Read(since);
    REQUIRE(reply.ok());
    std::vector<float> copy = history[since];
    if (reply->form == PullReply::Form::kDelta) {
      std::vector<uint32_t> indices;
      std::vector<float> values;
      REQUIRE(DecodePairs(reply->payload, n, &indices, &values).ok());
      for (size_t j = 0; j < indices.size(); ++j) copy[indices[j]] = values[j];
    } else if (reply->form == PullReply::Form::kDense) {
      REQUIRE(Decode(reply->payload, absl::MakeSpan(copy)).ok());
    }
    CHECK(copy == history.back());
  }
}

TEST_CASE("snapshot and restore round-trip") {
  OptimizerConfig adam;
  adam.kind = OptimizerKind::kAdam;
  Chunk chunk(Info(64), adam);
  REQUIRE(chunk.Initialize(Random(64, 1)).ok());
  REQUIRE(chunk.Apply(Dense(Random(64, 2))).ok());
  const ChunkState saved = chunk.Snapshot();
  CHECK(saved.optimizer_state.size() == 128);
  Chunk other(Info(64), adam);
  REQUIRE(other.Restore(saved).ok());
  CHECK(other.Snapshot().params == saved.params);
  CHECK(other.Snapshot().optimizer_state == saved.optimizer_state);
  CHECK(other.version() == 1);
  ChunkState wrong = saved;
  wrong.params.pop_back();
  CHECK_FALSE(other.Restore(wrong).ok());
}

}  // namespace
}  // namespace leeway
