#include "server/histogram.h"

#include <algorithm>

namespace leeway {

const std::vector<double>& Histogram::Bounds() {
  static const std::vector<double>* const bounds = [] {
    auto* b = new std::vector<double>;
    for (int v = 0; v <= 8; ++v) b->push_back(v);
    for (uint64_t v = 16; v <= (uint64_t{1} << 20); v *= 2) b->push_back(double(v));
    return b;
  }();
  return *bounds;
}

Histogram::Histogram() : counts_(Bounds().size() + 1, 0) {}

void Histogram::Add(uint64_t value) {
  const auto& bounds = Bounds();
  const size_t bucket =
      std::lower_bound(bounds.begin(), bounds.end(), double(value)) - bounds.begin();
  absl::MutexLock lock(&mu_);
  ++counts_[bucket];
  ++count_;
  sum_ += double(value);
  max_ = std::max(max_, value);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.bounds = Bounds();
  absl::MutexLock lock(&mu_);
  s.counts = counts_;
  s.count = count_;
  s.sum = sum_;
  s.max = double(max_);
  return s;
}

}  // namespace leeway
