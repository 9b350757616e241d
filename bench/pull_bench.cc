// pull_bench: how fast a server answers pulls (Chunk::Read), against a
// memcpy of the chunk run right before each read (the ratios are medians
// of those pairs). A chunk takes one clock of top-k 1% pushes from
// --workers workers (different gradients: their union is the delta), then
// answers: the dense chunk (a first pull), the exact delta since the clock
// before, the same after a clock of dense pushes (every element changed: the
// stamps' scan, then the dense chunk), and with top-k pulls (pull density
// 1%) the delta of a new clock (the first such read also publishes: a top-k
// of the difference) and a later read of that clock (what the other workers
// pay). The simulator (bench/sim) takes the servers' read costs from here.
//
//   bazel run -c opt //bench:pull_bench -- --elements=4194304 --workers=4
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "server/chunk.h"

ABSL_FLAG(int, elements, 4 << 20, "elements of the chunk");
ABSL_FLAG(int, workers, 4, "workers pushing top-k 1% each clock");
ABSL_FLAG(int, repeats, 7, "pairs per figure; medians are reported");

namespace leeway {
namespace {

std::vector<float> Gradient(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> g(n);
  for (float& x : g) x = normal(rng);
  return g;
}

int Run() {
  const size_t n = absl::GetFlag(FLAGS_elements);
  const int workers = absl::GetFlag(FLAGS_workers);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  topk.density = 0.01f;
  topk.threads = 1;
  CodecParams none;
  none.codec = CodecId::kNone;
  none.threads = 1;
  // Each worker's top-k 1% push, and its dense push (a dense codec's pulls).
  std::vector<std::vector<uint8_t>> pushes(workers), dense_pushes(workers);
  for (int w = 0; w < workers; ++w) {
    if (!Encode(Gradient(n, 10 + w), {}, topk, &pushes[w]).ok()) return 1;
    if (!Encode(Gradient(n, 10 + w), {}, none, &dense_pushes[w]).ok()) return 1;
  }
  const std::vector<float> initial = Gradient(n, 1);
  std::vector<float> copy(n);
  auto copy_once = [&] { std::memcpy(copy.data(), initial.data(), 4 * n); };
  copy_once();

  std::printf("| pull | elements sent | / chunk | read ms | memcpy / read | memcpy ms |\n"
              "|---|---:|---:|---:|---:|---:|\n");
  for (float pull_density : {0.0f, 0.01f}) {
    OptimizerConfig sgd;
    sgd.learning_rate = 0.01f;
    ChunkOptions options;
    options.pull_density = pull_density;
    Chunk chunk(ChunkInfo{0, 0, 0, static_cast<uint32_t>(n)}, sgd, options);
    if (!chunk.Initialize(initial).ok()) return 1;
    uint32_t clock = 0;
    // One clock of pushes; returns the version a worker held before it.
    auto push_clock = [&](const std::vector<std::vector<uint8_t>>& clock_pushes) -> uint64_t {
      absl::StatusOr<PullReply> before = chunk.Read(kNoVersion, clock);
      for (const auto& p : clock_pushes) {
        if (!chunk.Apply(p).ok()) return kNoVersion;
      }
      ++clock;
      return before.ok() ? before->version : kNoVersion;
    };
    struct Row {
      const char* name;
      bool dense;         // a first pull of the new version: none known
      bool dense_pushes;  // the clock's pushes were dense (every element changed)
      bool later_read;    // another worker's read of the same clock
    };
    for (const Row& row : {Row{"dense", true, false, false}, Row{"delta", false, false, false},
                           Row{"delta after dense pushes", false, true, false},
                           Row{"delta, a later read of the clock", false, false, true}}) {
      if (pull_density > 0 && (row.dense || row.dense_pushes)) continue;  // as without
      if (pull_density == 0 && row.later_read) continue;  // the same as the first
      bool ok = true;
      uint64_t since = kNoVersion;
      absl::StatusOr<PullReply> reply;
      // Each read follows its own clock of pushes (untimed).
      const PairedTimes t = MedianPaired(
          repeats,
          [&] {
            // A clock of pushes first: replies are built once a version.
            since = push_clock(row.dense_pushes ? dense_pushes : pushes);
            if (row.dense) since = kNoVersion;
            // The clock's first read publishes (top-k pulls); time a later one.
            if (row.later_read) ok &= chunk.Read(since, clock).ok();
          },
          copy_once,
          [&] {
            reply = chunk.Read(since, clock);
            ok &= reply.ok();
          });
      std::vector<uint32_t> indices;
      std::vector<float> values;
      ok = ok && reply.ok() &&
           (reply->form == PullReply::Form::kDense ||
            DecodePairs(reply->payload(), n, &indices, &values).ok());
      const size_t sent = ok && reply->form == PullReply::Form::kDense ? n : indices.size();
      if (!ok) return 1;
      std::printf("| %s%s | %zu | %.3f | %.2f | %.2f | %.2f |\n", row.name,
                  pull_density > 0 ? " (top-k pulls 1%)" : "", sent,
                  static_cast<double>(sent) / n, 1e3 * t.seconds, t.ratio,
                  1e3 * t.baseline_seconds);
    }
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
