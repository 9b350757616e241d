// Reads a communication-study table (bench/comm_study's Markdown output,
// e.g. bench/results/resnet50-1gbit.md): the workload line and one row per
// measured configuration, so that the simulator can be validated against
// what was measured. Malformed input is an INVALID_ARGUMENT naming the line.
#ifndef LEEWAY_BENCH_SIM_STUDY_TABLE_H_
#define LEEWAY_BENCH_SIM_STUDY_TABLE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leeway {
namespace sim {

struct StudyRow {
  bool stragglers = false;
  std::string configuration;  // bsp-none, ssp2-adaptive, ...
  bool overlap = true;
  double samples_per_s = 0;
  double comm_share = 0;      // 0..1
  double bytes_per_iteration = 0;
  double staleness_p99 = -1;  // -1: the table has no such column
};

struct StudyTable {
  std::string workload;
  double gpu_ms = 0;
  int batch = 32;  // samples per iteration and worker
  int servers = 0;
  int workers = 0;
  int clocks = 0;
  std::vector<StudyRow> rows;
};

absl::StatusOr<StudyTable> ParseStudyTable(const std::string& markdown);

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_STUDY_TABLE_H_
