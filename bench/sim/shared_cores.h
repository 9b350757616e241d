// CPU time in the iteration model: processes that each run their jobs one
// at a time, in the order given, on a machine whose cores they share the
// way a time-slicing scheduler shares them: while n jobs run on c cores,
// each gets min(1, c / n) CPU-seconds per second (processor sharing), so a
// short job that arrives behind a long one ends early instead of waiting
// for it, as on a real machine. With c = 0 every process has a core of its
// own. Completions come back in time order, with the time they happened.
// Every running job gets the same rate, so the model keeps one clock of
// CPU-seconds served to each running job and a heap of the served time at
// which each process's job ends: O(log processes) an event, for the
// projection's thousands of processes.
#ifndef LEEWAY_BENCH_SIM_SHARED_CORES_H_
#define LEEWAY_BENCH_SIM_SHARED_CORES_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

namespace leeway {
namespace sim {

class SharedCores {
 public:
  struct Done {
    double t;
    uint64_t token;
  };

  SharedCores(int cores, int processes);

  // Advances to `now` and returns every job that has ended by then. `now`
  // never goes back.
  std::vector<Done> AdvanceTo(double now);

  // Queues `seconds` of CPU work for `process` at `now`, known on its end
  // by `token`; returns what AdvanceTo(now) would (the jobs that ended by
  // then, before this one joined).
  std::vector<Done> Submit(double now, int process, double seconds, uint64_t token);

  // When the next running job ends if nothing else arrives; +inf if none
  // runs.
  double NextEnd() const;

 private:
  struct Job {
    double left;  // CPU seconds
    uint64_t token;
  };
  struct End {
    double served;  // served_ at which the process's running job ends
    int process;
    bool operator>(const End& o) const {
      return served != o.served ? served > o.served : process > o.process;
    }
  };
  double Rate() const;  // CPU-seconds per second of each running job
  void Start(int process);  // its front job starts running now

  int cores_;
  double now_ = 0;
  double served_ = 0;  // CPU-seconds each running job has had since time 0
  std::vector<std::deque<Job>> queues_;  // per process; the front one runs
  std::priority_queue<End, std::vector<End>, std::greater<End>> ends_;  // running jobs
};

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_SHARED_CORES_H_
