// Where a run's CPU goes, by process role and thread name: a sampler that
// reads /proc (every thread of every process whose name starts with a
// prefix, and the machine's totals) at a fixed interval while a run goes
// on, and the shares of the machine's CPU time each (role, thread) took in
// a window of the run. Roles are process names less the prefix
// ("leeway-server" -> "server"; a name Linux cut at 15 bytes is completed
// from argv[0]); threads are their names
// (core/common/thread_name.h; a thread named like its process is "main").
//
// Guarantees: a process or thread that ends between two samples counts up
// to its last sample; one that starts counts from its first (its time
// before that is unseen, at most one interval); /proc files that vanish
// while read are skipped, and so are the two intervals around a sample
// whose machine totals could not be read. Shares are of all the machine's
// CPU time in the window (cores x seconds), idle included, so they add up
// with the machine's idle share to about 100%. A sample holds every
// matching thread's counter (some 10 KB for a study's seven processes).
#ifndef LEEWAY_BENCH_THREAD_CPU_H_
#define LEEWAY_BENCH_THREAD_CPU_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace leeway {

// One /proc/<pid>/task/<tid>/stat line: the thread's name and its user +
// system time in clock ticks. The name may hold spaces and parentheses
// (it ends at the last ')').
struct TaskTicks {
  std::string name;
  uint64_t ticks = 0;
};
absl::StatusOr<TaskTicks> ParseTaskStat(absl::string_view stat);

// The first line of /proc/stat: user, nice, system, idle, iowait, irq,
// softirq, steal (ticks, machine-wide).
struct MachineTicks {
  uint64_t user = 0, system = 0, idle = 0, softirq = 0, steal = 0;
  uint64_t total() const { return user + system + idle + softirq + steal; }
};
absl::StatusOr<MachineTicks> ParseMachineStat(absl::string_view stat);

struct ThreadShare {
  std::string role;
  std::string thread;
  double share = 0;  // of the machine's CPU time in the window
};
struct CpuProfile {
  // The machine's shares (softirq: hard and soft interrupts).
  double user = 0, system = 0, idle = 0, softirq = 0, steal = 0;
  // Largest first.
  std::vector<ThreadShare> threads;
  // "user 57% sys 21% idle 13% irq 9% steal 0%; worker lw-push 28.7%, ..."
  // with the threads at `min_share` or more.
  std::string Summary(double min_share = 0.005) const;
};

// One sample: every matching thread's ticks so far, keyed by (pid, tid).
struct CpuSample {
  absl::Time time;
  MachineTicks machine;
  std::map<std::pair<int, int>, std::pair<std::string, TaskTicks>> tasks;  // -> (role, ticks)
};

// The shares between the samples at fractions [from, to] of the series'
// time span (0.35, 0.95: leave out start-up and the first clocks).
CpuProfile ProfileOf(const std::vector<CpuSample>& series, double from, double to);

class ThreadCpuSampler {
 public:
  // Starts sampling processes named `prefix`... every `interval`.
  ThreadCpuSampler(std::string prefix, absl::Duration interval);
  ~ThreadCpuSampler();
  // Stops and returns what was sampled.
  std::vector<CpuSample> Stop();

 private:
  CpuSample Sample() const;

  const std::string prefix_;
  const absl::Duration interval_;
  std::atomic<bool> stop_{false};
  absl::Mutex mu_;
  std::vector<CpuSample> series_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace leeway

#endif  // LEEWAY_BENCH_THREAD_CPU_H_
