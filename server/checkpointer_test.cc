#include "server/checkpointer.h"

#include <vector>

#include "catch2/catch.hpp"
#include "kernels/codec.h"
#include "tests/subprocess.h"

namespace leeway {
namespace {

std::vector<uint8_t> Dense(std::vector<float> g) {
  CodecParams p;
  std::vector<uint8_t> payload;
  REQUIRE(Encode(g, {}, p, &payload).ok());
  return payload;
}

TEST_CASE("a server restores its chunks and clocks from its checkpoint") {
  const std::string dir = testing::MakeTempDir("checkpointer");
  OptimizerConfig momentum;
  momentum.kind = OptimizerKind::kMomentum;
  momentum.learning_rate = 0.5f;
  std::vector<float> params, state;
  {
    ServerCore core(ServerCoreOptions{1});
    REQUIRE(core.AddChunk({4, 0, 0, 3}, momentum).ok());
    REQUIRE(core.Initialize(4, 0, std::vector<float>{1, 2, 3}).ok());
    core.Join(0);
    REQUIRE(core.Push(0, 4, 0, 0, Dense({1, 1, 1})).ok());
    REQUIRE(core.Clock(0, 1, 1).ok());
    Checkpointer checkpointer(&core, std::make_unique<CheckpointStore>(dir, 2),
                              absl::ZeroDuration());
    REQUIRE(checkpointer.WriteNow().ok());
    const ChunkState saved = (*core.FindChunk(4, 0))->Snapshot();
    params = saved.params;
    state = saved.optimizer_state;
  }
  ServerCore restarted(ServerCoreOptions{1});
  Checkpointer checkpointer(&restarted, std::make_unique<CheckpointStore>(dir, 2),
                            absl::ZeroDuration());
  REQUIRE(checkpointer.RestoreNewest().ok());
  auto chunk = restarted.FindChunk(4, 0);
  REQUIRE(chunk.ok());
  const ChunkState restored = (*chunk)->Snapshot();
  CHECK(restored.params == params);
  CHECK(restored.optimizer_state == state);
  CHECK(restored.version == 1 + kRestartVersionStep);
  CHECK(*restarted.tracker().ViewOf(0) == 1);
  // The worker goes on where it was: its next CLOCK is 2.
  REQUIRE(restarted.Push(0, 4, 0, 1, Dense({1, 1, 1})).ok());
  REQUIRE(restarted.Clock(0, 2, 1).ok());
  CHECK(*restarted.tracker().ViewOf(0) == 2);
}

TEST_CASE("restoring from an empty directory is NOT_FOUND") {
  ServerCore core(ServerCoreOptions{});
  Checkpointer checkpointer(&core,
                            std::make_unique<CheckpointStore>(testing::MakeTempDir("empty"), 2),
                            absl::ZeroDuration());
  CHECK(checkpointer.RestoreNewest().code() == absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace leeway
