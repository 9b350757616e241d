#include "bench/sim/study_table.h"

#include <cstdio>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace leeway {
namespace sim {
namespace {

absl::Status Bad(int line, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("study table line ", line, ": ", why));
}

bool Number(absl::string_view text, double* out) {
  text = absl::StripAsciiWhitespace(text);
  absl::ConsumeSuffix(&text, "%");
  return absl::SimpleAtod(text, out);
}

}  // namespace

absl::StatusOr<StudyTable> ParseStudyTable(const std::string& markdown) {
  StudyTable table;
  int line_number = 0;
  bool header_seen = false;
  for (absl::string_view line : absl::StrSplit(markdown, '\n')) {
    ++line_number;
    if (absl::StartsWith(line, "Workload ")) {
      char workload[64] = {0};
      const std::string text(line);
      // Tables before the batch was a column of the header say 32 samples.
      table.batch = 32;
      const bool parsed =
          std::sscanf(text.c_str(),
                      "Workload %63s (%lf ms GPU per iteration), batch %d, %d servers, %d workers, "
                      "%d clocks",
                      workload, &table.gpu_ms, &table.batch, &table.servers, &table.workers,
                      &table.clocks) == 6 ||
          std::sscanf(text.c_str(),
                      "Workload %63s (%lf ms GPU per iteration), %d servers, %d workers, %d clocks",
                      workload, &table.gpu_ms, &table.servers, &table.workers, &table.clocks) == 5;
      if (!parsed || table.servers < 1 || table.workers < 1 || table.clocks < 1 ||
          table.gpu_ms < 0 || table.batch < 1) {
        return Bad(line_number,
                   "expected 'Workload NAME (MS ms GPU per iteration), [batch B, ]S servers, "
                   "W workers, C clocks'");
      }
      table.workload = workload;
      header_seen = true;
      continue;
    }
    if (!absl::StartsWith(line, "| equal") && !absl::StartsWith(line, "| stragglers")) continue;
    std::vector<absl::string_view> cells = absl::StrSplit(line, '|');
    // "", workers, configuration, pipelining, samples/s, /BSP, comm share,
    // /BSP, bytes/iter, /BSP, staleness p99, compression, ""
    if (cells.size() < 10) return Bad(line_number, "too few columns");
    StudyRow row;
    row.stragglers = absl::StripAsciiWhitespace(cells[1]) == "stragglers";
    row.configuration = std::string(absl::StripAsciiWhitespace(cells[2]));
    const absl::string_view pipelining = absl::StripAsciiWhitespace(cells[3]);
    if (pipelining != "on" && pipelining != "off") return Bad(line_number, "pipelining is on or off");
    row.overlap = pipelining == "on";
    if (!Number(cells[4], &row.samples_per_s) || row.samples_per_s <= 0 ||
        !Number(cells[6], &row.comm_share) || row.comm_share < 0 || row.comm_share > 100 ||
        !Number(cells[8], &row.bytes_per_iteration) || row.bytes_per_iteration <= 0) {
      return Bad(line_number, "samples/s, comm share and bytes/iter must be positive numbers");
    }
    row.comm_share /= 100;
    if (cells.size() > 11 && !Number(cells[10], &row.staleness_p99)) {
      return Bad(line_number, "staleness p99 must be a number");
    }
    table.rows.push_back(row);
  }
  if (!header_seen) return Bad(line_number, "no 'Workload ...' line");
  if (table.rows.empty()) return Bad(line_number, "no measured rows");
  return table;
}

}  // namespace sim
}  // namespace leeway
