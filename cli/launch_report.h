// What `leeway launch` reports at the end: the workers' result files
// (leeway-worker --result_file) and the coordinator's staleness figure
// folded into one summary, printed as a table or one JSON object, and the
// SVG plot of a run's loss and test accuracy over time (leeway-worker
// --history_file lines: seconds,clock,loss,test_accuracy).
#ifndef LEEWAY_CLI_LAUNCH_REPORT_H_
#define LEEWAY_CLI_LAUNCH_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leeway {

struct WorkerResult {
  int rank = 0;
  int clocks = 0;
  double test_accuracy = 0;
  double test_loss = 0;
  double samples_per_sec = 0;
  double comm_share = 0;
  double pull_wait_share = 0;  // the part of comm_share spent waiting for pulls
  double bytes_per_iter = 0;
  double messages_per_iter = 0;  // data-plane messages sent and received
  double compression_ratio = 1;
  double seconds = 0;
};

// Parses one result file's JSON object (flat: numbers and strings).
absl::StatusOr<WorkerResult> ParseWorkerResult(const std::string& json);

struct LaunchSummary {
  std::string run;  // e.g. "SSP s=2, adaptive"
  int servers = 0;
  int workers = 0;
  int clocks = 0;
  double seconds = 0;
  double test_accuracy = 0;      // mean over workers
  double test_accuracy_min = 0;
  double samples_per_sec = 0;    // summed over workers
  double comm_share = 0;         // mean
  double pull_wait_share = 0;    // mean: the part of comm_share waiting for pulls
  double bytes_per_iter = 0;     // mean, per worker
  double messages_per_iter = 0;  // mean, per worker
  double staleness_p99 = 0;
  double compression_ratio = 1;  // mean
};

LaunchSummary Summarize(const std::vector<WorkerResult>& results);
std::string SummaryJson(const LaunchSummary& s);
// The inverse of SummaryJson (what `leeway launch -o json` printed).
absl::StatusOr<LaunchSummary> ParseSummary(const std::string& json);
std::string SummaryTable(const LaunchSummary& s);

struct HistoryPoint {
  double seconds = 0;
  int clock = 0;
  double loss = 0;
  double accuracy = -1;  // < 0: not evaluated
};

// Lines "seconds,clock,loss,accuracy"; malformed lines are skipped.
std::vector<HistoryPoint> ParseHistory(const std::string& text);

struct PlotSeries {
  std::string label;
  std::vector<HistoryPoint> points;
};

// Two panels, training loss and test accuracy against seconds, one line
// per series; the series' data ride along in comments.
std::string PlotSvg(const std::vector<PlotSeries>& series);
// The series a PlotSvg file holds (none for any other file).
std::vector<PlotSeries> PlotSeriesIn(const std::string& svg);

}  // namespace leeway

#endif  // LEEWAY_CLI_LAUNCH_REPORT_H_
