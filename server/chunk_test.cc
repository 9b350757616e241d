#include "server/chunk.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec.h"
#include "kernels/topk_select.h"

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

// Applies a pull reply to a copy held at the version the pull named.
void ApplyReply(const PullReply& reply, uint32_t n, std::vector<float>* copy) {
  if (reply.form == PullReply::Form::kDelta) {
    std::vector<uint32_t> indices;
    std::vector<float> values;
    REQUIRE(DecodePairs(reply.payload(), n, &indices, &values).ok());
    for (size_t j = 0; j < indices.size(); ++j) (*copy)[indices[j]] = values[j];
  } else if (reply.form == PullReply::Form::kDense) {
    REQUIRE(Decode(reply.payload(), absl::MakeSpan(*copy)).ok());
  }
}

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
  ApplyReply(*first, n, &copy);
  const uint64_t held = first->version;

  // Sparse pushes change few blocks: a delta brings the copy up to date.
  for (uint64_t seed = 10; seed < 13; ++seed) {
    REQUIRE(chunk.Apply(TopK(Random(n, seed), 0.01f)).ok());
  }
  auto delta = chunk.Read(held);
  REQUIRE(delta.ok());
  CHECK(delta->version == 3);
  REQUIRE(delta->form == PullReply::Form::kDelta);
  CHECK(delta->payload().size() < CompressedSize({CodecId::kNone}, n) / 2);
  ApplyReply(*delta, n, &copy);
  CHECK(copy == Params(chunk));  // bit for bit

  auto same = chunk.Read(3);
  REQUIRE(same.ok());
  CHECK(same->form == PullReply::Form::kNotModified);
  CHECK(same->payload().empty());

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

std::vector<uint8_t> Pairs(uint32_t n, const std::vector<uint32_t>& indices) {
  std::vector<uint8_t> payload;
  REQUIRE(EncodePairs(n, indices, std::vector<float>(indices.size(), 1.0f),
                      &payload)
              .ok());
  return payload;
}

std::vector<uint32_t> DeltaIndices(const PullReply& reply, uint32_t n) {
  REQUIRE(reply.form == PullReply::Form::kDelta);
  std::vector<uint32_t> indices;
  std::vector<float> values;
  REQUIRE(DecodePairs(reply.payload(), n, &indices, &values).ok());
  return indices;
}

TEST_CASE("a delta carries exactly the elements changed since the version") {
  const uint32_t n = 1000;
  Chunk chunk(Info(n), Sgd(0.1f));
  REQUIRE(chunk.Initialize(Random(n, 5)).ok());
  REQUIRE(chunk.Apply(Pairs(n, {3, 500, 999})).ok());  // version 1
  REQUIRE(chunk.Apply(Pairs(n, {4, 500})).ok());       // version 2
  CHECK(DeltaIndices(*chunk.Read(0), n) == std::vector<uint32_t>{3, 4, 500, 999});
  CHECK(DeltaIndices(*chunk.Read(1), n) == std::vector<uint32_t>{4, 500});

  // Coarser blocks (less memory) send whole blocks.
  Chunk coarse(Info(n), Sgd(0.1f), ChunkOptions{/*block_elements=*/8});
  REQUIRE(coarse.Initialize(Random(n, 5)).ok());
  REQUIRE(coarse.Apply(Pairs(n, {3, 998})).ok());
  CHECK(DeltaIndices(*coarse.Read(0), n) ==
        std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 992, 993, 994, 995, 996,
                              997, 998, 999});

  // After a dense push or a restore only the dense chunk brings an older
  // copy up to date; deltas start again from there.
  REQUIRE(chunk.Apply(Dense(Random(n, 6))).ok());  // version 3
  CHECK(chunk.Read(2)->form == PullReply::Form::kDense);
  REQUIRE(chunk.Apply(Pairs(n, {7})).ok());  // version 4
  CHECK(DeltaIndices(*chunk.Read(3), n) == std::vector<uint32_t>{7});
  CHECK(chunk.Read(1)->form == PullReply::Form::kDense);
  REQUIRE(chunk.Restore(chunk.Snapshot()).ok());
  CHECK(chunk.Read(3)->form == PullReply::Form::kDense);
  CHECK(chunk.Read(4)->form == PullReply::Form::kNotModified);
}

TEST_CASE("deltas from every older version reproduce the chunk") {
  const uint32_t n = 1000;
  const uint32_t block = GENERATE(1u, 8u);
  Chunk chunk(Info(n), Sgd(0.1f), ChunkOptions{block});
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
    ApplyReply(*reply, n, &copy);
    CHECK(copy == history.back());
  }
}

TEST_CASE("with a pull density, pulls get the largest changes once a clock") {
  const uint32_t n = 10000;
  ChunkOptions options;
  options.pull_density = 0.01f;  // 100 elements a clock
  Chunk chunk(Info(n), Sgd(1.0f), options);
  REQUIRE(chunk.sparse_pulls());
  REQUIRE(chunk.Initialize(Random(n, 1)).ok());
  auto first = chunk.Read(kNoVersion, 0);
  REQUIRE(first->form == PullReply::Form::kDense);
  std::vector<float> copy(n);
  ApplyReply(*first, n, &copy);
  uint64_t held = first->version;

  // Eight workers' 1% pushes change about 8% of the elements; one element
  // changes far more than the rest.
  for (uint64_t w = 0; w < 8; ++w) REQUIRE(chunk.Apply(TopK(Random(n, 50 + w), 0.01f)).ok());
  REQUIRE(chunk.Apply(Pairs(n, {1234})).ok());  // -1.0 at element 1234
  std::vector<float> g(n, 0.0f);
  g[4321] = 100;
  REQUIRE(chunk.Apply(TopK(g, 0.0001f)).ok());
  const std::vector<float> params = Params(chunk);
  size_t changed = 0;
  for (uint32_t i = 0; i < n; ++i) changed += params[i] != copy[i];
  REQUIRE(changed > 500);

  // Clock 1's first pull publishes: 100 elements, the largest changes among them.
  auto published = chunk.Read(held, 1);
  REQUIRE(published.ok());
  CHECK(published->version == chunk.version());
  const std::vector<uint32_t> sent = DeltaIndices(*published, n);
  CHECK(sent.size() == 100);
  CHECK(std::count(sent.begin(), sent.end(), 4321u) == 1);
  float smallest_sent = 1e30f, largest_kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const float change = std::fabs(params[i] - copy[i]);
    if (std::count(sent.begin(), sent.end(), i)) {
      smallest_sent = std::min(smallest_sent, change);
    } else {
      largest_kept = std::max(largest_kept, change);
    }
  }
  CHECK(smallest_sent >= largest_kept);
  ApplyReply(*published, n, &copy);
  held = published->version;

  // More pushes in the same clock publish nothing: not modified.
  REQUIRE(chunk.Apply(TopK(Random(n, 70), 0.01f)).ok());
  CHECK(chunk.Read(held, 1)->form == PullReply::Form::kNotModified);
  CHECK(chunk.Read(held, 0)->form == PullReply::Form::kNotModified);

  // What was not sent stays owed: without new pushes, clock after clock
  // brings the copy to the parameters, bit for bit, 100 elements at a time.
  const std::vector<float> final_params = Params(chunk);
  for (uint32_t clock = 2; clock < 2 + (n / 100) + 1; ++clock) {
    auto reply = chunk.Read(held, clock);
    REQUIRE(reply.ok());
    if (reply->form == PullReply::Form::kNotModified) break;
    REQUIRE(reply->form == PullReply::Form::kDelta);
    CHECK(DeltaIndices(*reply, n).size() <= 100);
    ApplyReply(*reply, n, &copy);
    held = reply->version;
  }
  CHECK(copy == final_params);
  CHECK(held == chunk.version());
}

TEST_CASE("publications on a large chunk send the exact top-k of what differs") {
  // Large enough for the sampled selection and its hint; sparse pushes keep
  // the difference element by element, a dense one makes it recomputed.
  const uint32_t n = 200000;
  ChunkOptions options;
  options.pull_density = 0.01f;  // 2,000 elements a clock
  Chunk chunk(Info(n), Sgd(0.1f), options);
  REQUIRE(chunk.Initialize(Random(n, 1)).ok());
  auto first = chunk.Read(kNoVersion, 0);
  std::vector<float> copy(n);
  ApplyReply(*first, n, &copy);
  uint64_t held = first->version;
  uint32_t clock = 1;
  auto publish_and_check = [&] {
    const std::vector<float> params = Params(chunk);
    std::vector<float> difference(n);
    size_t differ = 0;
    for (uint32_t i = 0; i < n; ++i) {
      difference[i] = params[i] - copy[i];
      differ += difference[i] != 0.0f;
    }
    std::vector<uint32_t> expected;
    SelectTopKExact(difference, 2000, &expected);
    expected.erase(std::remove_if(expected.begin(), expected.end(),
                                  [&](uint32_t i) { return difference[i] == 0.0f; }),
                   expected.end());
    auto reply = chunk.Read(held, clock++);
    REQUIRE(reply.ok());
    if (differ == 0) {
      CHECK(reply->form == PullReply::Form::kNotModified);
      return;
    }
    REQUIRE(reply->form == PullReply::Form::kDelta);
    CHECK(DeltaIndices(*reply, n) == expected);
    ApplyReply(*reply, n, &copy);
    held = reply->version;
  };
  for (int step = 0; step < 24; ++step) {
    INFO("step " << step);
    if (step == 10) {
      REQUIRE(chunk.Apply(Dense(Random(n, 900))).ok());
    } else if (step < 16) {
      for (uint64_t w = 0; w < 4; ++w) {
        REQUIRE(chunk.Apply(TopK(Random(n, 100 * step + w), 0.01f)).ok());
      }
    }
    publish_and_check();
  }
  // Without pushes the owed elements drain to the parameters, bit for bit.
  for (int drain = 0; drain < 110 && copy != Params(chunk); ++drain) publish_and_check();
  CHECK(copy == Params(chunk));
  CHECK(chunk.Read(held, clock++)->form == PullReply::Form::kNotModified);
}

TEST_CASE("a publication's own reply matches the stamps' scan, blocks and all") {
  // Two twins take the same pushes; the first's pulls hold the copy before
  // each publication (the reply the publication built), the second's an
  // older one (Read's scan). Both must reproduce the served copy, and with
  // blocks of 8 the publication's reply carries whole blocks.
  const uint32_t n = 20003;  // a short last block
  for (uint32_t block : {1u, 8u}) {
    INFO("block " << block);
    ChunkOptions options;
    options.block_elements = block;
    options.pull_density = 0.01f;
    Chunk chunk(Info(n), Sgd(0.1f), options);
    REQUIRE(chunk.Initialize(Random(n, 1)).ok());
    auto first = chunk.Read(kNoVersion, 0);
    std::vector<float> copy(n), behind(n);
    ApplyReply(*first, n, &copy);
    behind = copy;
    uint64_t held = first->version, held_behind = first->version;
    for (uint32_t clock = 1; clock <= 6; ++clock) {
      INFO("clock " << clock);
      for (uint64_t w = 0; w < 4; ++w) {
        REQUIRE(chunk.Apply(TopK(Random(n, 10 * clock + w), 0.01f)).ok());
      }
      std::vector<float> g(n, 0.0f);
      g[n - 1] = 50.0f * clock;  // the short last block publishes every clock
      REQUIRE(chunk.Apply(TopK(g, 0.0001f)).ok());
      auto reply = chunk.Read(held, clock);
      REQUIRE(reply.ok());
      REQUIRE(reply->form == PullReply::Form::kDelta);
      const std::vector<uint32_t> sent = DeltaIndices(*reply, n);
      CHECK(sent.size() >= 200);
      CHECK(std::count(sent.begin(), sent.end(), n - 1) == 1);
      for (size_t j = 0; j < sent.size(); ++j) {
        const uint32_t start = sent[j] / block * block;
        // Every block is whole: its first element leads, the rest follow.
        CHECK(sent[j - (sent[j] - start)] == start);
      }
      ApplyReply(*reply, n, &copy);
      held = reply->version;
      auto dense = chunk.Read(kNoVersion, clock);
      std::vector<float> served(n);
      ApplyReply(*dense, n, &served);
      CHECK(copy == served);
      if (clock % 2 == 0) {  // a puller two publications behind
        auto late = chunk.Read(held_behind, clock);
        REQUIRE(late.ok());
        ApplyReply(*late, n, &behind);
        held_behind = late->version;
        CHECK(behind == served);
      }
    }
  }
}

TEST_CASE("a publication made ahead is the one the clock's first pull would make") {
  // Twins take the same pushes; one publishes ahead of each clock's pull,
  // the other when the pull comes. Their replies are the same, and a
  // clock publishes once.
  const uint32_t n = 20000;
  ChunkOptions options;
  options.pull_density = 0.01f;
  Chunk ahead(Info(n), Sgd(0.1f), options), on_pull(Info(n), Sgd(0.1f), options);
  CHECK_FALSE(ahead.PublishFor(1));  // no initial values yet
  for (Chunk* c : {&ahead, &on_pull}) REQUIRE(c->Initialize(Random(n, 1)).ok());
  uint64_t held = ahead.Read(kNoVersion, 0)->version;
  REQUIRE(on_pull.Read(kNoVersion, 0)->version == held);
  for (uint32_t clock = 1; clock <= 3; ++clock) {
    INFO("clock " << clock);
    for (Chunk* c : {&ahead, &on_pull}) REQUIRE(c->Apply(TopK(Random(n, 7 * clock), 0.05f)).ok());
    CHECK(ahead.PublishFor(clock));
    const uint64_t published = ahead.version();
    CHECK_FALSE(ahead.PublishFor(clock));      // once a clock
    CHECK_FALSE(ahead.PublishFor(clock - 1));  // and never for an older one
    auto a = ahead.Read(held, clock);
    auto b = on_pull.Read(held, clock);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(ahead.version() == published);  // the pull published nothing more
    CHECK(a->version == b->version);
    CHECK(a->form == PullReply::Form::kDelta);
    CHECK(DeltaIndices(*a, n) == DeltaIndices(*b, n));
    CHECK(*a->body == *b->body);
    held = a->version;
  }
  Chunk exact(Info(n), Sgd(), ChunkOptions{});
  REQUIRE(exact.Initialize(Random(n, 1)).ok());
  CHECK_FALSE(exact.PublishFor(1));  // no pull density: nothing to publish
}

TEST_CASE("NotePush counts the workers that pushed a chunk at its newest clock") {
  Chunk chunk(Info(16), Sgd());
  CHECK(chunk.NotePush(0, 3) == 1);
  CHECK(chunk.NotePush(0, 3) == 1);  // a worker counts once
  CHECK(chunk.NotePush(2, 3) == 2);
  CHECK(chunk.NotePush(1, 2) == 0);  // an older clock: not counted
  CHECK(chunk.NotePush(1, 3) == 3);
  CHECK(chunk.NotePush(2, 4) == 1);  // a newer clock starts over
  CHECK(chunk.NotePush(0, 3) == 0);
  CHECK(chunk.NotePush(0, 4) == 2);
}

TEST_CASE("a pull density leaves small chunks exact and restarts from a restore") {
  ChunkOptions options;
  options.pull_density = 0.01f;
  Chunk small(Info(kSparsePullMinElements - 1), Sgd(), options);
  CHECK_FALSE(small.sparse_pulls());
  Chunk off(Info(10000), Sgd(), ChunkOptions{});
  CHECK_FALSE(off.sparse_pulls());

  const uint32_t n = 10000;
  Chunk chunk(Info(n), Sgd(1.0f), options);
  REQUIRE(chunk.Initialize(Random(n, 1)).ok());
  REQUIRE(chunk.Apply(Dense(Random(n, 2))).ok());  // changes every element
  auto reply = chunk.Read(0, 1);
  CHECK(DeltaIndices(*reply, n).size() == 100);  // a dense push, still 100
  // A restore serves the restored parameters, dense to any older copy.
  ChunkState state = chunk.Snapshot();
  REQUIRE(chunk.Restore(state).ok());
  auto restored = chunk.Read(0, 2);
  REQUIRE(restored->form == PullReply::Form::kDense);
  std::vector<float> copy(n);
  ApplyReply(*restored, n, &copy);
  CHECK(copy == state.params);
  CHECK(chunk.Read(restored->version, 3)->form == PullReply::Form::kNotModified);
}

TEST_CASE("pulls of the same versions share one delta, built once") {
  constexpr uint32_t n = 10000;
  Chunk chunk(Info(n), Sgd());
  REQUIRE(chunk.Initialize(Random(n, 1)).ok());
  const uint64_t v0 = chunk.version();
  REQUIRE(chunk.Apply(TopK(Random(n, 2), 0.01f)).ok());
  absl::StatusOr<PullReply> first = chunk.Read(v0);
  absl::StatusOr<PullReply> second = chunk.Read(v0);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE(first->form == PullReply::Form::kDelta);
  CHECK(second->form == PullReply::Form::kDelta);
  CHECK(second->body == first->body);  // the same bytes, not a copy
  // The dense chunk of a version is built once too.
  absl::StatusOr<PullReply> dense = chunk.Read(kNoVersion);
  REQUIRE(dense.ok());
  CHECK(dense->form == PullReply::Form::kDense);
  CHECK(chunk.Read(kNoVersion)->body == dense->body);
  // Another since-version gets its own delta; both stay right.
  REQUIRE(chunk.Apply(TopK(Random(n, 3), 0.01f)).ok());
  const uint64_t v2 = chunk.version();
  absl::StatusOr<PullReply> from_v0 = chunk.Read(v0);
  absl::StatusOr<PullReply> from_v1 = chunk.Read(v0 + 1);
  REQUIRE(from_v0.ok());
  REQUIRE(from_v1.ok());
  CHECK(from_v0->body != first->body);
  CHECK(from_v0->body != from_v1->body);
  CHECK(chunk.Read(kNoVersion)->body != dense->body);
  CHECK(chunk.Read(v0 + 1)->body == from_v1->body);
  // A restore may reuse version numbers with other contents: nothing
  // built before it is served after it.
  ChunkState state = chunk.Snapshot();
  for (float& x : state.params) x += 1;
  REQUIRE(state.version == v2);
  REQUIRE(chunk.Restore(state).ok());
  absl::StatusOr<PullReply> after = chunk.Read(v0 + 1);
  REQUIRE(after.ok());
  CHECK(after->body != from_v1->body);
  std::vector<float> copy(n, 0.0f);
  REQUIRE(after->form == PullReply::Form::kDense);  // everything changed
  ApplyReply(*after, n, &copy);
  CHECK(copy == state.params);
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
