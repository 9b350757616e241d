// Timing helpers shared by the benchmarks: the median wall time of several
// runs (medians, because absolute times on shared machines drift).
#ifndef LEEWAY_BENCH_TIMING_H_
#define LEEWAY_BENCH_TIMING_H_

#include <algorithm>
#include <chrono>
#include <vector>

namespace leeway {

template <typename Fn>
double MedianSeconds(int repeats, Fn fn) {
  std::vector<double> times;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace leeway

#endif  // LEEWAY_BENCH_TIMING_H_
