// End-to-end benchmark: the MNIST MLP trained by `leeway launch` (2 servers,
// 4 workers on this machine) for a fixed number of clocks, with several
// seeds, under
//   (a) BSP uncompressed - the baseline, measured in the same run,
//   (b) SSP s = 2 uncompressed,
//   (c) BSP adaptive compression,
//   (d) SSP s = 2 adaptive compression.
// Prints a Markdown table of medians over the seeds (accuracy: mean and
// spread) with each figure's ratio to (a).
//
//   bazel build -c opt //cli:leeway //coordinator:leeway-coordinator
//     //server:leeway-server //worker:leeway-worker //bench:e2e_bench
//   bazel-bin/bench/e2e_bench --data_dir=data/mnist --seeds=3 --clocks=1000
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/launch_runner.h"
#include "cli/launch_report.h"
#include "core/common/file_text.h"

ABSL_FLAG(std::string, data_dir, "data/mnist", "MNIST IDX files (deploy/fetch-mnist.sh)");
ABSL_FLAG(std::string, bin_dir, "bazel-bin",
          "where cli/leeway and the other binaries were built");
ABSL_FLAG(int, seeds, 3, "seeds per configuration");
ABSL_FLAG(int, clocks, 1000, "iterations per worker");
ABSL_FLAG(int, servers, 2, "servers");
ABSL_FLAG(int, workers, 4, "workers");
ABSL_FLAG(std::string, hidden, "256", "hidden layer widths");
ABSL_FLAG(std::string, transport, "sm", "sm or tcp");
ABSL_FLAG(std::string, work_dir, "/tmp/leeway-e2e-bench", "run directories go here");
ABSL_FLAG(std::string, plot, "",
          "an SVG of loss and test accuracy over time, one line per configuration (seed 1)");

namespace leeway {
namespace {

struct Configuration {
  const char* label;
  const char* staleness;
  const char* compression;
};

constexpr Configuration kConfigurations[] = {
    {"(a) BSP, uncompressed", "0", "none"},
    {"(b) SSP s=2, uncompressed", "2", "none"},
    {"(c) BSP, adaptive", "0", "adaptive"},
    {"(d) SSP s=2, adaptive", "2", "adaptive"},
};

std::string RunDir(const Configuration& c, int seed) {
  return absl::StrCat(absl::GetFlag(FLAGS_work_dir), "/", c.staleness, "-", c.compression,
                      "-seed", seed);
}

absl::StatusOr<LaunchSummary> RunOnce(const Configuration& c, int seed) {
  return RunLaunch(absl::GetFlag(FLAGS_bin_dir),
                   {absl::StrCat("--servers=", absl::GetFlag(FLAGS_servers)),
                    absl::StrCat("--workers=", absl::GetFlag(FLAGS_workers)),
                    absl::StrCat("--staleness=", c.staleness),
                    absl::StrCat("--compression=", c.compression),
                    absl::StrCat("--clocks=", absl::GetFlag(FLAGS_clocks)),
                    "--hidden=" + absl::GetFlag(FLAGS_hidden), absl::StrCat("--seed=", seed),
                    "--transport=" + absl::GetFlag(FLAGS_transport),
                    "--data-dir=" + absl::GetFlag(FLAGS_data_dir)},
                   RunDir(c, seed), absl::Minutes(30));
}

int Run() {
  const int seeds = std::max(1, absl::GetFlag(FLAGS_seeds));
  std::vector<FoldedRuns> rows;
  std::vector<PlotSeries> series;
  for (const Configuration& c : kConfigurations) {
    std::vector<LaunchSummary> runs;
    for (int seed = 1; seed <= seeds; ++seed) {
      absl::StatusOr<LaunchSummary> s = RunOnce(c, seed);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", std::string(s.status().message()).c_str());
        return 1;
      }
      std::fprintf(stderr, "%s seed %d: %.2f%% accuracy, %.0f samples/s, comm %.1f%%\n", c.label,
                   seed, 100 * s->test_accuracy, s->samples_per_sec, 100 * s->comm_share);
      runs.push_back(*s);
    }
    rows.push_back(Fold(runs));
    // Rank 0 evaluates the test set; its history is the run's curve.
    series.push_back({c.label, ParseHistory(ReadFileOrEmpty(RunDir(c, 1) + "/worker0.history"))});
  }
  if (!absl::GetFlag(FLAGS_plot).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_plot)) << PlotSvg(series);
    std::fprintf(stderr, "plot: %s\n", absl::GetFlag(FLAGS_plot).c_str());
  }
  std::printf("%d servers, %d workers, hidden %s, %d clocks, %s; medians of %d seeds "
              "(accuracy: mean, min-max); ratios to (a)\n\n",
              absl::GetFlag(FLAGS_servers), absl::GetFlag(FLAGS_workers),
              absl::GetFlag(FLAGS_hidden).c_str(), absl::GetFlag(FLAGS_clocks),
              absl::GetFlag(FLAGS_transport).c_str(), seeds);
  std::printf("| configuration | samples/s | / (a) | comm share | / (a) | bytes/iter | / (a) | "
              "staleness p99 | test accuracy | - (a), points | seconds |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  const FoldedRuns& a = rows[0];
  for (size_t i = 0; i < rows.size(); ++i) {
    const FoldedRuns& r = rows[i];
    std::printf("| %s | %.0f | %.2f | %.1f%% | %.2f | %.0f | %.3f | %.1f | %.2f%% (%.2f-%.2f) | "
                "%+.2f | %.1f |\n",
                kConfigurations[i].label, r.samples_per_sec, r.samples_per_sec / a.samples_per_sec,
                100 * r.comm_share, a.comm_share > 0 ? r.comm_share / a.comm_share : 0,
                r.bytes_per_iter, r.bytes_per_iter / a.bytes_per_iter, r.staleness_p99,
                100 * r.accuracy_mean, 100 * r.accuracy_min, 100 * r.accuracy_max,
                100 * (r.accuracy_mean - a.accuracy_mean), r.seconds);
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
