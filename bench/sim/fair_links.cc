#include "bench/sim/fair_links.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/sim/seeded.h"

namespace leeway {
namespace sim {

FairLinks::FairLinks(std::vector<double> capacity, double flow_cap)
    : capacity_(std::move(capacity)), flow_cap_(flow_cap) {}

void FairLinks::ShareOut() {
  // Weighted progressive filling: raise a common level, each unfrozen
  // connection's rate its weight times it, until a link is full (its
  // connections freeze) or a connection reaches the cap (it freezes).
  std::vector<double> left = capacity_;
  std::vector<size_t> unfrozen = busy_;
  while (!unfrozen.empty()) {
    std::vector<double> weight_on(capacity_.size(), 0);
    double level = std::numeric_limits<double>::infinity();
    for (size_t c : unfrozen) {
      weight_on[connections_[c].from] += Weight(c);
      weight_on[connections_[c].to] += Weight(c);
      if (flow_cap_ > 0) level = std::min(level, flow_cap_ / Weight(c));
    }
    for (size_t l = 0; l < left.size(); ++l) {
      if (weight_on[l] > 0) level = std::min(level, left[l] / weight_on[l]);
    }
    auto full = [&](int l) { return left[l] / weight_on[l] <= level * (1 + 1e-12); };
    std::vector<size_t> still;
    std::vector<size_t> frozen;
    for (size_t c : unfrozen) {
      const Connection& k = connections_[c];
      const bool at_cap = flow_cap_ > 0 && level * Weight(c) >= flow_cap_ * (1 - 1e-12);
      (at_cap || full(k.from) || full(k.to) ? frozen : still).push_back(c);
    }
    for (size_t c : frozen) {
      Connection& k = connections_[c];
      k.rate = level * Weight(c);
      left[k.from] = std::max(0.0, left[k.from] - k.rate);
      left[k.to] = std::max(0.0, left[k.to] - k.rate);
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
                                               uint64_t token, double weight) {
  std::vector<Done> done = AdvanceTo(now);
  auto [it, added] = index_.emplace(std::make_pair(from, to), connections_.size());
  if (added) connections_.push_back({from, to, {}, 0});
  Connection& k = connections_[it->second];
  k.queue.push_back({std::max(0.0, bytes), token, weight > 0 ? weight : 1});
  if (k.queue.size() == 1) {
    busy_.push_back(it->second);
    ShareOut();
  }
  return done;
}

double Unfairness::SpreadAt(double bytes) const {
  if (points.empty()) return 0;
  if (bytes <= points.front().first) return points.front().second;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& [b0, s0] = points[i - 1];
    const auto& [b1, s1] = points[i];
    if (bytes <= b1) return s0 + (s1 - s0) * std::log(bytes / b0) / std::log(b1 / b0);
  }
  return points.back().second;
}

std::string Unfairness::ToString() const {
  if (points.empty()) return "none";
  std::string out;
  for (const auto& [bytes, spread] : points) {
    absl::StrAppend(&out, out.empty() ? "" : ", ", bytes / (1 << 20), " MiB +-",
                    absl::SixDigits(spread));
  }
  return out;
}

double MeanFirstToLast(int flows, double weight_spread, int trials) {
  double sum = 0;
  uint64_t draw = 0;
  for (int trial = 0; trial < trials; ++trial) {
    // Senders 0..flows-1 into link `flows`.
    FairLinks links(std::vector<double>(flows + 1, 1.0), 0);
    for (int f = 0; f < flows; ++f) {
      links.Submit(0, f, flows, 1.0, f, WeightFrom(1, draw++, weight_spread));
    }
    const std::vector<FairLinks::Done> done = links.AdvanceTo(std::numeric_limits<double>::max());
    sum += done.front().t / done.back().t;
  }
  return trials > 0 ? sum / trials : 1;
}

absl::StatusOr<Unfairness> UnfairnessFromSpreads(absl::string_view text) {
  constexpr double kMaxSpread = 0.95;
  constexpr int kTrials = 2000;
  Unfairness u;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, ':');
    double bytes = 0, ratio = 0;
    if (!absl::SimpleAtod(kv.first, &bytes) || !absl::SimpleAtod(kv.second, &ratio) || bytes < 1 ||
        ratio <= 0 || ratio > 1 || (!u.points.empty() && bytes <= u.points.back().first)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "expected BYTES:RATIO with sizes ascending and 0 < RATIO <= 1, got '", item, "'"));
    }
    // MeanFirstToLast falls as the spread grows.
    double lo = 0, hi = kMaxSpread;
    if (MeanFirstToLast(4, hi, kTrials) >= ratio) lo = hi;
    for (int i = 0; i < 30 && hi - lo > 1e-6; ++i) {
      const double mid = (lo + hi) / 2;
      (MeanFirstToLast(4, mid, kTrials) > ratio ? lo : hi) = mid;
    }
    u.points.push_back({bytes, (lo + hi) / 2});
  }
  return u;
}

}  // namespace sim
}  // namespace leeway
