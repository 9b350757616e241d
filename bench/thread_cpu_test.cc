#include "bench/thread_cpu.h"

#include <atomic>
#include <thread>

#include "catch2/catch.hpp"
#include "core/common/thread_name.h"

namespace leeway {
namespace {

TEST_CASE("a task's stat line gives its name and user + system ticks") {
  // A name with a space and parentheses: it ends at the last ')'.
  absl::StatusOr<TaskTicks> t = ParseTaskStat(
      "4242 (lw (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 "
      "731 269 0 0 20 0 9 0 12345 1000000 100 18446744073709551615");
  REQUIRE(t.ok());
  CHECK(t->name == "lw (odd) name");
  CHECK(t->ticks == 731 + 269);
  CHECK_FALSE(ParseTaskStat("4242 lw-push S 1 2 3").ok());
  CHECK_FALSE(ParseTaskStat("4242 (lw-push) S 1 2 3").ok());  // short
  CHECK_FALSE(ParseTaskStat("4242 (lw-push) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 269 0").ok());
}

TEST_CASE("the machine line folds nice into user, iowait into idle, irq into softirq") {
  absl::StatusOr<MachineTicks> m =
      ParseMachineStat("cpu  100 5 40 800 10 2 8 30 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n");
  REQUIRE(m.ok());
  CHECK(m->user == 105);
  CHECK(m->system == 40);
  CHECK(m->idle == 810);
  CHECK(m->softirq == 10);
  CHECK(m->steal == 30);
  CHECK_FALSE(ParseMachineStat("intr 1 2 3").ok());
  CHECK_FALSE(ParseMachineStat("cpu  1 2 3").ok());
}

CpuSample At(int seconds, uint64_t machine_busy, uint64_t machine_idle,
             std::vector<std::pair<int, uint64_t>> push_threads) {
  CpuSample s;
  s.time = absl::UnixEpoch() + absl::Seconds(seconds);
  s.machine.user = machine_busy;
  s.machine.idle = machine_idle;
  for (auto [tid, ticks] : push_threads) {
    s.tasks[{7, tid}] = {"worker", TaskTicks{"lw-push", ticks}};
  }
  return s;
}

TEST_CASE("shares cover the window only, threads summed by role and name") {
  // 100 ticks of machine time a second. Thread 1 burns 50 a second
  // throughout; thread 2 starts at t=3 (its first 40 ticks unseen) and
  // burns 10 a second.
  std::vector<CpuSample> series;
  for (int t = 0; t <= 10; ++t) {
    std::vector<std::pair<int, uint64_t>> threads = {{1, 50u * t}};
    if (t >= 3) threads.push_back({2, 40 + 10u * (t - 3)});
    series.push_back(At(t, 5000 + 60u * t, 9000 + 40u * t, threads));
  }
  const CpuProfile all = ProfileOf(series, 0, 1);
  REQUIRE(all.threads.size() == 1);  // one (role, thread) key
  CHECK(all.threads[0].role == "worker");
  CHECK(all.threads[0].thread == "lw-push");
  // 500 ticks of thread 1 and 70 of thread 2 over 1,000.
  CHECK(all.threads[0].share == Approx(0.57));
  CHECK(all.user == Approx(0.6));
  CHECK(all.idle == Approx(0.4));
  // From t=5 on both run the whole window: (50 + 10) / 100.
  const CpuProfile late = ProfileOf(series, 0.5, 1);
  CHECK(late.threads[0].share == Approx(0.6));
  CHECK(late.Summary().find("worker lw-push 60.0%") != std::string::npos);
  CHECK(ProfileOf(series, 0.5, 0.55).threads.empty());  // one sample: no interval
  // A sample whose /proc/stat could not be read leaves its two intervals
  // out, threads included, instead of wrapping around.
  series[6].machine = MachineTicks();
  const CpuProfile gap = ProfileOf(series, 0.5, 1);
  CHECK(gap.user == Approx(0.6));
  CHECK(gap.idle == Approx(0.4));
  CHECK(gap.threads[0].share == Approx(0.6));
}

TEST_CASE("the sampler sees a busy named thread of a matching process") {
  // This test's own process matches the prefix of its own name.
  std::atomic<bool> done{false};
  std::thread busy([&] {
    NameThisThread("lw-busy");
    volatile uint64_t x = 0;
    while (!done.load()) x = x + 1;
  });
  ThreadCpuSampler sampler("thread_cpu", absl::Milliseconds(50));
  absl::SleepFor(absl::Milliseconds(600));
  std::vector<CpuSample> series = sampler.Stop();
  done = true;
  busy.join();
  REQUIRE(series.size() >= 5);
  const CpuProfile p = ProfileOf(series, 0, 1);
  bool seen = false;
  for (const ThreadShare& t : p.threads) {
    if (t.thread == "lw-busy") {
      seen = true;
      CHECK(t.role == "_test");
      CHECK(t.share > 0.05);  // a spinning thread: about 1 / cores of the machine
    }
  }
  CHECK(seen);
}

}  // namespace
}  // namespace leeway
