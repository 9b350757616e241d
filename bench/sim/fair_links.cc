#include "bench/sim/fair_links.h"

#include <algorithm>
#include <limits>

namespace leeway {
namespace sim {

FairLinks::FairLinks(std::vector<double> capacity, double flow_cap)
    : capacity_(std::move(capacity)), flow_cap_(flow_cap) {}

void FairLinks::ShareOut() {
  // Progressive filling: raise every unfrozen connection's rate together
  // until a link is full (its connections freeze at that rate) or the cap
  // is reached (all freeze).
  std::vector<double> left = capacity_;
  std::vector<int> unfrozen_on(capacity_.size(), 0);
  std::vector<size_t> unfrozen = busy_;
  for (size_t c : unfrozen) {
    ++unfrozen_on[connections_[c].from];
    ++unfrozen_on[connections_[c].to];
  }
  while (!unfrozen.empty()) {
    double level = flow_cap_ > 0 ? flow_cap_ : std::numeric_limits<double>::infinity();
    for (size_t l = 0; l < left.size(); ++l) {
      if (unfrozen_on[l] > 0) level = std::min(level, left[l] / unfrozen_on[l]);
    }
    auto full = [&](int l) { return left[l] / unfrozen_on[l] <= level * (1 + 1e-12); };
    std::vector<size_t> still;
    std::vector<size_t> frozen;
    for (size_t c : unfrozen) {
      const Connection& k = connections_[c];
      const bool at_cap = flow_cap_ > 0 && level >= flow_cap_;
      (at_cap || full(k.from) || full(k.to) ? frozen : still).push_back(c);
    }
    for (size_t c : frozen) {
      Connection& k = connections_[c];
      k.rate = level;
      left[k.from] = std::max(0.0, left[k.from] - level);
      left[k.to] = std::max(0.0, left[k.to] - level);
      --unfrozen_on[k.from];
      --unfrozen_on[k.to];
    }
    unfrozen.swap(still);
  }
}

double FairLinks::NextEnd() const {
  double least = std::numeric_limits<double>::infinity();
  for (size_t c : busy_) {
    const Connection& k = connections_[c];
    least = std::min(least, now_ + k.queue.front().left / k.rate);
  }
  return least;
}

double FairLinks::RateOf(int from, int to) const {
  auto it = index_.find({from, to});
  if (it == index_.end() || connections_[it->second].queue.empty()) return 0;
  return connections_[it->second].rate;
}

std::vector<FairLinks::Done> FairLinks::AdvanceTo(double now) {
  std::vector<Done> done;
  while (!busy_.empty()) {
    // The connection whose message is through first.
    size_t first = busy_[0];
    auto time_left = [&](size_t c) {
      return connections_[c].queue.front().left / connections_[c].rate;
    };
    for (size_t c : busy_) {
      if (time_left(c) < time_left(first)) first = c;
    }
    const double least = time_left(first);
    const double end = now_ + least;
    const double until = std::min(end, now);
    const double dt = until - now_;
    now_ = until;
    std::vector<size_t> still;
    for (size_t c : busy_) {
      Connection& k = connections_[c];
      // At `end` the first message and those that tie with it (within the
      // clock's rounding) are through.
      const bool through =
          end <= now && (c == first || time_left(c) - least <= 1e-12 * (1 + now_));
      k.queue.front().left -= k.rate * dt;
      if (through) {
        done.push_back({now_, k.queue.front().token});
        k.queue.pop_front();
      }
      if (!k.queue.empty()) still.push_back(c);
    }
    busy_.swap(still);
    if (end > now) break;
    ShareOut();
  }
  now_ = std::max(now_, now);
  return done;
}

std::vector<FairLinks::Done> FairLinks::Submit(double now, int from, int to, double bytes,
                                               uint64_t token) {
  std::vector<Done> done = AdvanceTo(now);
  auto [it, added] = index_.emplace(std::make_pair(from, to), connections_.size());
  if (added) connections_.push_back({from, to, {}, 0});
  Connection& k = connections_[it->second];
  k.queue.push_back({std::max(0.0, bytes), token});
  if (k.queue.size() == 1) {
    busy_.push_back(it->second);
    ShareOut();
  }
  return done;
}

}  // namespace sim
}  // namespace leeway
