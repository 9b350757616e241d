// server_bench: how fast a server applies pushes, against a memcpy of the
// same bytes measured in the same run. Dense fp32 pushes (SGD and Adam, in
// GB/s of gradient) and 1%-dense top-k pushes (million nonzeros/s), with 1
// and 2 apply threads over --chunks chunks. Medians of --repeats runs.
//
//   bazel run -c opt //bench:server_bench -- --elements=4194304 --chunks=4
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "bench/timing.h"
#include "kernels/codec.h"
#include "server/apply_pool.h"
#include "server/chunk.h"

ABSL_FLAG(int, elements, 4 << 20, "elements per chunk");
ABSL_FLAG(int, chunks, 4, "chunks (applied in parallel across threads)");
ABSL_FLAG(int, repeats, 5, "runs per figure; the median is reported");
ABSL_FLAG(std::string, threads, "1,2", "apply thread counts");

namespace leeway {
namespace {

struct Case {
  const char* name;
  OptimizerKind optimizer;
  bool sparse;
};

int Run() {
  const size_t n = absl::GetFlag(FLAGS_elements);
  const int chunks = absl::GetFlag(FLAGS_chunks);
  const int repeats = absl::GetFlag(FLAGS_repeats);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.01f);
  std::vector<float> g(n);
  for (auto& x : g) x = normal(rng);
  CodecParams dense_params;
  dense_params.threads = 1;
  CodecParams sparse_params = dense_params;
  sparse_params.codec = CodecId::kTopK;
  sparse_params.density = 0.01f;
  std::vector<uint8_t> dense, sparse;
  if (!Encode(g, {}, dense_params, &dense).ok() ||
      !Encode(g, {}, sparse_params, &sparse).ok()) {
    std::fprintf(stderr, "encode failed\n");
    return 1;
  }
  const size_t k = SparseKeep(0.01f, n);
  const double bytes = 4.0 * n * chunks;
  std::vector<float> src(n * chunks, 1.0f), dst(n * chunks, 0.0f);
  const double memcpy_s = MedianSeconds(repeats, [&] {
    std::memcpy(dst.data(), src.data(), src.size() * sizeof(float));
  });

  std::printf("| push | optimizer | apply threads | GB/s of gradient | / memcpy | "
              "M nonzeros/s | M nonzeros/s per thread | memcpy GB/s |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|\n");
  const Case cases[] = {{"dense fp32", OptimizerKind::kSgd, false},
                        {"dense fp32", OptimizerKind::kAdam, false},
                        {"top-k 1%", OptimizerKind::kSgd, true}};
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_threads), ',')) {
    int threads = 0;
    if (!absl::SimpleAtoi(text, &threads) || threads <= 0) return 1;
    for (const Case& c : cases) {
      OptimizerConfig optimizer;
      optimizer.kind = c.optimizer;
      optimizer.learning_rate = 0.01f;
      std::vector<std::unique_ptr<Chunk>> store;
      for (int i = 0; i < chunks; ++i) {
        store.push_back(std::make_unique<Chunk>(
            ChunkInfo{0, static_cast<uint32_t>(i), 0, static_cast<uint32_t>(n)}, optimizer));
        (void)store.back()->Initialize(g);
      }
      const std::vector<uint8_t>& payload = c.sparse ? sparse : dense;
      ApplyPool pool(threads);
      bool ok = true;
      absl::Mutex mu;
      const double seconds = MedianSeconds(repeats, [&] {
        for (int i = 0; i < chunks; ++i) {
          pool.Submit(i, [&, i] {
            const bool applied = store[i]->Apply(payload).ok();
            absl::MutexLock lock(&mu);
            ok &= applied;
          });
        }
        pool.Drain();
      });
      if (!ok) {
        std::fprintf(stderr, "apply failed\n");
        return 1;
      }
      const double nnz = c.sparse ? double(k) * chunks : double(n) * chunks;
      // GB/s of gradient is a dense figure; sparse pushes count nonzeros.
      const std::string gbps = c.sparse ? "-" : absl::StrFormat("%.2f", bytes / seconds / 1e9);
      const std::string ratio = c.sparse ? "-" : absl::StrFormat("%.2f", memcpy_s / seconds);
      std::printf("| %s | %s | %d | %s | %s | %.1f | %.1f | %.2f |\n", c.name,
                  OptimizerName(c.optimizer), threads, gbps.c_str(), ratio.c_str(),
                  nnz / seconds / 1e6, nnz / seconds / 1e6 / threads,
                  bytes / memcpy_s / 1e9);
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
