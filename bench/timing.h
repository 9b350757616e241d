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

// fn timed against a baseline run right before it, `repeats` times: the
// medians of fn's time, of the baseline's, and of the per-pair ratio
// baseline / fn. Pairing keeps the ratio honest while the machine's speed
// drifts between the rows of a table.
struct PairedTimes {
  double seconds = 0;
  double baseline_seconds = 0;
  double ratio = 0;
};

// setup() runs untimed before each pair.
template <typename Setup, typename Baseline, typename Fn>
PairedTimes MedianPaired(int repeats, Setup setup, Baseline baseline, Fn fn) {
  std::vector<double> times, baselines, ratios;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    setup();
    const double base = MedianSeconds(1, baseline);
    const double t = MedianSeconds(1, fn);
    times.push_back(t);
    baselines.push_back(base);
    ratios.push_back(base / t);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {median(times), median(baselines), median(ratios)};
}

template <typename Baseline, typename Fn>
PairedTimes MedianPaired(int repeats, Baseline baseline, Fn fn) {
  return MedianPaired(repeats, [] {}, baseline, fn);
}

}  // namespace leeway

#endif  // LEEWAY_BENCH_TIMING_H_
