// Whole training runs for the benchmarks that compare them (e2e_bench,
// comm_study): `leeway launch -o json` as a child process, its summary
// parsed, and repeated runs (seeds) folded into medians - the figures
// these benchmarks report as ratios to a baseline run in the same
// invocation.
#ifndef LEEWAY_BENCH_LAUNCH_RUNNER_H_
#define LEEWAY_BENCH_LAUNCH_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/launch_report.h"

namespace leeway {

// Runs `<bin_dir>/cli/leeway launch -o json --run-dir=<run_dir>
// --bin-dir=<bin_dir>/cli <flags>`; its output goes to <run_dir>.out.
absl::StatusOr<LaunchSummary> RunLaunch(const std::string& bin_dir,
                                        const std::vector<std::string>& flags,
                                        const std::string& run_dir, absl::Duration timeout);

struct FoldedRuns {
  // Medians over the runs.
  double samples_per_sec = 0, comm_share = 0, bytes_per_iter = 0, staleness_p99 = 0;
  double seconds = 0, compression_ratio = 0, messages_per_iter = 0;
  double pull_wait_share = 0;  // the part of comm_share waiting for pulls
  // Test accuracy over the runs (< 0: not evaluated).
  double accuracy_mean = 0, accuracy_min = 0, accuracy_max = 0;
  int runs = 0;
};

FoldedRuns Fold(const std::vector<LaunchSummary>& runs);
double Median(std::vector<double> values);

}  // namespace leeway

#endif  // LEEWAY_BENCH_LAUNCH_RUNNER_H_
