#include "bench/thread_cpu.h"

#include <dirent.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/common/file_text.h"

namespace leeway {
namespace {

// The numeric entries of a /proc directory.
std::vector<int> NumericEntries(const std::string& dir) {
  std::vector<int> ids;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return ids;
  while (dirent* e = readdir(d)) {
    int id = 0;
    if (absl::SimpleAtoi(e->d_name, &id)) ids.push_back(id);
  }
  closedir(d);
  return ids;
}

}  // namespace

absl::StatusOr<TaskTicks> ParseTaskStat(absl::string_view stat) {
  const size_t open = stat.find('(');
  const size_t close = stat.rfind(')');
  if (open == absl::string_view::npos || close == absl::string_view::npos || close < open) {
    return absl::InvalidArgumentError("task stat without a (name)");
  }
  TaskTicks t;
  t.name = std::string(stat.substr(open + 1, close - open - 1));
  // After the name: state, ppid, ... utime is the 12th field, stime the 13th.
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
  uint64_t utime = 0, stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InvalidArgumentError(absl::StrCat("task stat of ", t.name, " is short"));
  }
  t.ticks = utime + stime;
  return t;
}

absl::StatusOr<MachineTicks> ParseMachineStat(absl::string_view stat) {
  absl::string_view line = stat.substr(0, stat.find('\n'));
  if (!absl::ConsumePrefix(&line, "cpu ")) return absl::InvalidArgumentError("no cpu line");
  std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
  uint64_t v[8] = {};
  if (fields.size() < 8) return absl::InvalidArgumentError("short cpu line");
  for (int i = 0; i < 8; ++i) {
    if (!absl::SimpleAtoi(fields[i], &v[i])) return absl::InvalidArgumentError("bad cpu line");
  }
  // user nice system idle iowait irq softirq steal
  MachineTicks m;
  m.user = v[0] + v[1];
  m.system = v[2];
  m.idle = v[3] + v[4];
  m.softirq = v[5] + v[6];
  m.steal = v[7];
  return m;
}

std::string CpuProfile::Summary(double min_share) const {
  std::string s = absl::StrFormat("user %.0f%% sys %.0f%% idle %.0f%% irq %.0f%% steal %.0f%%",
                                  100 * user, 100 * system, 100 * idle, 100 * softirq, 100 * steal);
  const char* separator = "; ";
  for (const ThreadShare& t : threads) {
    if (t.share < min_share) break;
    absl::StrAppendFormat(&s, "%s%s %s %.1f%%", separator, t.role, t.thread, 100 * t.share);
    separator = ", ";
  }
  return s;
}

CpuProfile ProfileOf(const std::vector<CpuSample>& series, double from, double to) {
  CpuProfile p;
  if (series.size() < 2) return p;
  const absl::Time t0 = series.front().time;
  const absl::Duration span = series.back().time - t0;
  std::vector<const CpuSample*> window;
  for (const CpuSample& s : series) {
    if (s.time >= t0 + from * span && s.time <= t0 + to * span) window.push_back(&s);
  }
  if (window.size() < 2) return p;
  MachineTicks m;
  std::map<std::pair<std::string, std::string>, uint64_t> by_thread;
  for (size_t i = 1; i < window.size(); ++i) {
    const CpuSample& a = *window[i - 1];
    const CpuSample& b = *window[i];
    // Counters only grow; a sample whose /proc/stat was unreadable (zeros)
    // leaves its two intervals out.
    const MachineTicks& x = a.machine;
    const MachineTicks& y = b.machine;
    if (x.total() == 0 || y.user < x.user || y.system < x.system || y.idle < x.idle ||
        y.softirq < x.softirq || y.steal < x.steal) {
      continue;
    }
    m.user += y.user - x.user;
    m.system += y.system - x.system;
    m.idle += y.idle - x.idle;
    m.softirq += y.softirq - x.softirq;
    m.steal += y.steal - x.steal;
    for (const auto& [id, task] : b.tasks) {
      auto before = a.tasks.find(id);
      if (before == a.tasks.end()) continue;  // started since: unseen
      const uint64_t was = before->second.second.ticks, now = task.second.ticks;
      if (now > was) by_thread[{task.first, task.second.name}] += now - was;
    }
  }
  const double total = static_cast<double>(std::max<uint64_t>(1, m.total()));
  p.user = m.user / total;
  p.system = m.system / total;
  p.idle = m.idle / total;
  p.softirq = m.softirq / total;
  p.steal = m.steal / total;
  for (const auto& [key, ticks] : by_thread) {
    p.threads.push_back({key.first, key.second, ticks / total});
  }
  std::sort(p.threads.begin(), p.threads.end(),
            [](const ThreadShare& x, const ThreadShare& y) { return x.share > y.share; });
  return p;
}

ThreadCpuSampler::ThreadCpuSampler(std::string prefix, absl::Duration interval)
    : prefix_(std::move(prefix)), interval_(interval) {
  thread_ = std::thread([this] {
    while (!stop_.load()) {
      CpuSample s = Sample();
      {
        absl::MutexLock lock(&mu_);
        series_.push_back(std::move(s));
      }
      absl::SleepFor(interval_);
    }
  });
}

ThreadCpuSampler::~ThreadCpuSampler() { Stop(); }

std::vector<CpuSample> ThreadCpuSampler::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  return series_;
}

CpuSample ThreadCpuSampler::Sample() const {
  CpuSample s;
  s.time = absl::Now();
  absl::StatusOr<MachineTicks> machine = ParseMachineStat(ReadFileOrEmpty("/proc/stat"));
  if (machine.ok()) s.machine = *machine;
  for (int pid : NumericEntries("/proc")) {
    const std::string dir = absl::StrCat("/proc/", pid);
    std::string process(absl::StripAsciiWhitespace(ReadFileOrEmpty(dir + "/comm")));
    if (!absl::StartsWith(process, prefix_)) continue;
    // Linux cuts names at 15 bytes ("leeway-coordina"): take argv[0]'s.
    std::string full = process;
    if (process.size() == 15) {
      const std::string cmdline = ReadFileOrEmpty(dir + "/cmdline");
      const std::string argv0 = cmdline.substr(0, cmdline.find('\0'));
      const std::string base = argv0.substr(argv0.rfind('/') + 1);
      if (absl::StartsWith(base, process)) full = base;
    }
    const std::string role = full.substr(prefix_.size());
    for (int tid : NumericEntries(dir + "/task")) {
      absl::StatusOr<TaskTicks> t =
          ParseTaskStat(ReadFileOrEmpty(absl::StrCat(dir, "/task/", tid, "/stat")));
      if (!t.ok()) continue;  // it ended while we read
      if (t->name == process) t->name = "main";
      s.tasks[{pid, tid}] = {role, *std::move(t)};
    }
  }
  return s;
}

}  // namespace leeway
