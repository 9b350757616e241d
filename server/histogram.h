// A fixed-bucket histogram of small non-negative integers (staleness in
// clocks): one bucket per value 0..8, then powers of two up to 2^20, then
// overflow. Count, sum and max are exact. Thread-safe.
#ifndef LEEWAY_SERVER_HISTOGRAM_H_
#define LEEWAY_SERVER_HISTOGRAM_H_

#include <cstdint>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace leeway {

struct HistogramSnapshot {
  std::vector<double> bounds;    // upper bound (inclusive) of each bucket
  std::vector<uint64_t> counts;  // bounds.size() + 1 (the last: overflow)
  uint64_t count = 0;
  double sum = 0;
  double max = 0;
  double Mean() const { return count == 0 ? 0.0 : sum / count; }
};

class Histogram {
 public:
  Histogram();
  void Add(uint64_t value);
  HistogramSnapshot Snapshot() const;

 private:
  static const std::vector<double>& Bounds();
  mutable absl::Mutex mu_;
  std::vector<uint64_t> counts_ ABSL_GUARDED_BY(mu_);
  uint64_t count_ ABSL_GUARDED_BY(mu_) = 0;
  double sum_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t max_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_HISTOGRAM_H_
