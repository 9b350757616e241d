#include "bench/sim/shared_cores.h"

#include <algorithm>

namespace leeway {
namespace sim {

SharedCores::SharedCores(int cores, int processes) : cores_(cores), queues_(processes) {}

double SharedCores::Rate() const {
  const size_t running = ends_.size();
  if (cores_ == 0 || running <= static_cast<size_t>(cores_)) return 1;
  return static_cast<double>(cores_) / running;
}

double SharedCores::NextEnd() const {
  if (ends_.empty()) return std::numeric_limits<double>::infinity();
  return now_ + std::max(0.0, ends_.top().served - served_) / Rate();
}

void SharedCores::Start(int process) {
  ends_.push({served_ + queues_[process].front().left, process});
}

std::vector<SharedCores::Done> SharedCores::AdvanceTo(double now) {
  std::vector<Done> done;
  while (!ends_.empty()) {
    const double rate = Rate();
    const double end = now_ + std::max(0.0, ends_.top().served - served_) / rate;
    if (end > now) {
      served_ += std::max(0.0, now - now_) * rate;
      break;
    }
    now_ = end;
    served_ = std::max(served_, ends_.top().served);
    // Every job whose end ties with this one's (within the rounding of the
    // sums) is done too; a process's next job starts now.
    while (!ends_.empty() && ends_.top().served <= served_ * (1 + 1e-12)) {
      const int p = ends_.top().process;
      ends_.pop();
      done.push_back({now_, queues_[p].front().token});
      queues_[p].pop_front();
      if (!queues_[p].empty()) Start(p);
    }
  }
  now_ = std::max(now_, now);
  return done;
}

std::vector<SharedCores::Done> SharedCores::Submit(double now, int process, double seconds,
                                                   uint64_t token) {
  std::vector<Done> done = AdvanceTo(now);
  auto& q = queues_[process];
  q.push_back({std::max(0.0, seconds), token});
  if (q.size() == 1) Start(process);
  return done;
}

}  // namespace sim
}  // namespace leeway
