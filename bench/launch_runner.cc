#include "bench/launch_runner.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "cli/child_process.h"
#include "core/common/file_text.h"

namespace leeway {
namespace {

}  // namespace

absl::StatusOr<LaunchSummary> RunLaunch(const std::string& bin_dir,
                                        const std::vector<std::string>& flags,
                                        const std::string& run_dir, absl::Duration timeout) {
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(run_dir).parent_path(), ignored);
  std::vector<std::string> argv = {bin_dir + "/cli/leeway", "launch", "-o", "json",
                                   "--run-dir=" + run_dir, "--bin-dir=" + bin_dir + "/cli"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const std::string log = run_dir + ".out";
  absl::StatusOr<std::unique_ptr<ChildProcess>> launch =
      ChildProcess::Start("leeway launch", argv, {}, log);
  if (!launch.ok()) return launch.status();
  std::optional<int> code;
  const absl::Time deadline = absl::Now() + timeout;
  while (!(code = (*launch)->Poll()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  if (!code) code = (*launch)->Stop(absl::Seconds(5));
  if (*code != 0) {
    return absl::InternalError(absl::StrCat("leeway launch ", absl::StrJoin(flags, " "),
                                            " exited ", *code, ":\n", (*launch)->LastLines(20)));
  }
  std::vector<std::string> lines = absl::StrSplit(ReadFileOrEmpty(log), '\n', absl::SkipWhitespace());
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    if (it->rfind("{", 0) == 0) return ParseSummary(*it);
  }
  return absl::InternalError(absl::StrCat("no JSON summary in ", log));
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

FoldedRuns Fold(const std::vector<LaunchSummary>& runs) {
  FoldedRuns r;
  r.runs = static_cast<int>(runs.size());
  if (runs.empty()) return r;
  std::vector<double> rate, comm, pull_wait, bytes, stale, seconds, ratio, messages;
  r.accuracy_min = 1;
  r.accuracy_max = -1;
  for (const LaunchSummary& s : runs) {
    rate.push_back(s.samples_per_sec);
    comm.push_back(s.comm_share);
    pull_wait.push_back(s.pull_wait_share);
    bytes.push_back(s.bytes_per_iter);
    stale.push_back(s.staleness_p99);
    seconds.push_back(s.seconds);
    ratio.push_back(s.compression_ratio);
    messages.push_back(s.messages_per_iter);
    r.accuracy_mean += s.test_accuracy / runs.size();
    r.accuracy_min = std::min(r.accuracy_min, s.test_accuracy);
    r.accuracy_max = std::max(r.accuracy_max, s.test_accuracy);
  }
  r.samples_per_sec = Median(rate);
  r.comm_share = Median(comm);
  r.pull_wait_share = Median(pull_wait);
  r.bytes_per_iter = Median(bytes);
  r.staleness_p99 = Median(stale);
  r.seconds = Median(seconds);
  r.compression_ratio = Median(ratio);
  r.messages_per_iter = Median(messages);
  return r;
}

}  // namespace leeway
