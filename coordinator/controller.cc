#include "coordinator/controller.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace leeway {
namespace {

struct Option {
  float density = 1.0f;  // 1: dense
  uint64_t bytes = 0;
  double error = 0;
};

uint64_t DenseBytes(uint64_t n) {
  CodecParams dense;
  return CompressedSize(dense, n);
}

uint64_t PullBytes(uint64_t n, float d, uint32_t workers) {
  const uint64_t dense = DenseBytes(n);
  if (d >= 1.0f) return dense;
  const uint64_t changed =
      std::min<uint64_t>(n, static_cast<uint64_t>(std::ceil(double(workers) * d * n)));
  return std::min<uint64_t>(dense, 20 + 8 * changed);  // a delta: header, count, pairs
}

uint64_t PushBytes(CodecId codec, float d, CodecId values, uint64_t n) {
  CodecParams p;
  p.codec = codec;
  p.density = d;
  p.values = values;
  return CompressedSize(p, n);
}

// b in E(d) = |g|^2 (1 - d^b), fitted where the measurement allows it.
double Exponent(const LayerInput& in) {
  const double d0 = in.current_density;
  if (!(d0 > 0.0 && d0 < 1.0)) return 0.5;
  const double rho2 = in.residual_ratio * in.residual_ratio;
  const double captured = 1.0 - rho2 / (1.0 + rho2);
  if (!(captured > 0.0 && captured < 1.0)) return captured >= 1.0 ? 0.05 : 1.0;
  return std::clamp(std::log(captured) / std::log(d0), 0.05, 1.0);
}

// Every worthwhile option of a layer, by bytes ascending: the ladder's
// sparse densities whose push is smaller than the dense chunk, and dense.
std::vector<Option> Options(const LayerInput& in, const ControllerConfig& config,
                            uint32_t workers) {
  const double energy = in.gradient_norm * in.gradient_norm;
  const double b = Exponent(in);
  const uint64_t dense_push = DenseBytes(in.elements);
  std::vector<Option> options;
  for (float d : config.ladder) {
    if (!(d > 0.0f && d < 1.0f)) continue;
    const uint64_t push = PushBytes(CodecId::kTopK, d, config.value_codec, in.elements);
    if (push >= dense_push) continue;
    options.push_back({d, push + PullBytes(in.elements, d, workers),
                       energy * (1.0 - std::pow(double(d), b))});
  }
  options.push_back({1.0f, dense_push + PullBytes(in.elements, 1.0f, workers), 0.0});
  std::sort(options.begin(), options.end(), [](const Option& a, const Option& c) {
    return std::tie(a.bytes, a.density) < std::tie(c.bytes, c.density);
  });
  return options;
}

// The lower convex hull of (bytes, error): each step saves less error per
// byte than the one before.
std::vector<Option> Hull(const std::vector<Option>& options) {
  std::vector<Option> hull;
  for (const Option& o : options) {
    if (!hull.empty() && o.error >= hull.back().error) continue;  // dominated
    while (hull.size() >= 2) {
      const Option& a = hull[hull.size() - 2];
      const Option& b = hull.back();
      const double ab = (a.error - b.error) / double(std::max<uint64_t>(1, b.bytes - a.bytes));
      const double bc = (b.error - o.error) / double(std::max<uint64_t>(1, o.bytes - b.bytes));
      if (ab > bc) break;
      hull.pop_back();
    }
    hull.push_back(o);
  }
  return hull;
}

void Set(LayerDecision* d, const Option& o, CodecId value_codec, std::string reason) {
  d->codec = o.density >= 1.0f ? CodecId::kNone : CodecId::kTopK;
  d->density = o.density;
  d->value_codec = o.density >= 1.0f ? CodecId::kNone : value_codec;
  d->bytes = o.bytes;
  d->expected_error = o.error;
  d->reason = std::move(reason);
}

std::string Describe(const Option& o) {
  return o.density >= 1.0f ? std::string("dense")
                           : absl::StrFormat("top-k %g", o.density);
}

void Total(ControllerPlan* plan) {
  plan->planned_bytes = 0;
  plan->expected_error = 0;
  for (const LayerDecision& d : plan->layers) {
    plan->planned_bytes += d.bytes;
    plan->expected_error += d.expected_error;
  }
}

}  // namespace

absl::StatusOr<ControllerPolicy> ParsePolicy(const std::string& text) {
  ControllerPolicy p;
  if (text == "none") {
    p.kind = ControllerPolicy::Kind::kNone;
    return p;
  }
  if (text == "adaptive") return p;
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  if (parts.size() < 2 || parts.size() > 3 || parts[0] != "fixed") {
    return absl::InvalidArgumentError(absl::StrCat(
        "policy \"", text, "\" is not none, adaptive or fixed:<codec>[:<density>]"));
  }
  p.kind = ControllerPolicy::Kind::kFixed;
  bool known = false;
  for (uint8_t c = 0; c <= kMaxCodecId; ++c) {
    if (parts[1] == CodecName(static_cast<CodecId>(c))) {
      p.codec = static_cast<CodecId>(c);
      known = true;
    }
  }
  if (!known) return absl::InvalidArgumentError(absl::StrCat("unknown codec ", parts[1]));
  if (IsSparse(p.codec)) {
    if (parts.size() != 3 || !absl::SimpleAtof(parts[2], &p.density) ||
        !(p.density > 0.0f && p.density <= 1.0f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("policy ", text, " needs a density in (0, 1]"));
    }
  } else if (parts.size() == 3) {
    return absl::InvalidArgumentError(absl::StrCat(parts[1], " takes no density"));
  }
  return p;
}

std::string PolicyName(const ControllerPolicy& policy) {
  switch (policy.kind) {
    case ControllerPolicy::Kind::kNone: return "none";
    case ControllerPolicy::Kind::kAdaptive: return "adaptive";
    case ControllerPolicy::Kind::kFixed:
      return IsSparse(policy.codec)
                 ? absl::StrFormat("fixed:%s:%g", CodecName(policy.codec), policy.density)
                 : absl::StrCat("fixed:", CodecName(policy.codec));
  }
  return "?";
}

ControllerPlan DecidePlan(const ControllerPolicy& policy,
                          const ControllerConfig& config, const JobInput& job,
                          const std::vector<LayerInput>& layers) {
  ControllerPlan plan;
  const double budget = std::max(0.0, job.bandwidth_bytes_per_sec * job.overlap_seconds);
  plan.budget_bytes = static_cast<uint64_t>(std::min(budget, 1e18));
  const uint32_t workers = std::max<uint32_t>(1, job.workers);
  plan.layers.resize(layers.size());
  std::vector<std::vector<Option>> hulls(layers.size());
  std::vector<size_t> at(layers.size(), 0);  // the chosen hull point
  std::vector<bool> adaptive(layers.size(), false);
  uint64_t spent = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerInput& in = layers[i];
    LayerDecision& d = plan.layers[i];
    d.layer = in.layer;
    const Option dense{1.0f, DenseBytes(in.elements) + PullBytes(in.elements, 1.0f, workers), 0.0};
    if (in.elements < config.min_compress_elems || policy.kind == ControllerPolicy::Kind::kNone) {
      Set(&d, dense, config.value_codec,
          policy.kind == ControllerPolicy::Kind::kNone
              ? "policy none: dense"
              : absl::StrCat("small (", in.elements, " < ", config.min_compress_elems,
                             " elements): dense"));
      spent += d.bytes;
      continue;
    }
    if (policy.kind == ControllerPolicy::Kind::kFixed) {
      const float density = IsSparse(policy.codec) ? policy.density : 1.0f;
      d.codec = policy.codec;
      d.density = density;
      d.value_codec = IsSparse(policy.codec) ? config.value_codec : CodecId::kNone;
      d.bytes = PushBytes(policy.codec, density, d.value_codec, in.elements) +
                PullBytes(in.elements, density, workers);
      d.reason = absl::StrCat("policy ", PolicyName(policy));
      spent += d.bytes;
      continue;
    }
    adaptive[i] = true;
    hulls[i] = Hull(Options(in, config, workers));
    Set(&d, hulls[i][0], config.value_codec, "adaptive: cheapest");
    spent += d.bytes;
  }
  const bool warming = config.warmup > 0 && job.clock < config.warmup;
  if (warming) {
    const float d_min = *std::min_element(config.ladder.begin(), config.ladder.end());
    const double floor = std::pow(double(d_min), double(job.clock) / config.warmup);
    for (size_t i = 0; i < layers.size(); ++i) {
      if (!adaptive[i]) continue;
      for (const Option& o : Options(layers[i], config, workers)) {
        if (o.density + 1e-9 >= floor) {
          Set(&plan.layers[i], o, config.value_codec,
              absl::StrFormat("warm-up clock %u/%u: density >= %.3g, %s", job.clock,
                              config.warmup, floor, Describe(o)));
          break;
        }
      }
    }
    Total(&plan);
    plan.within_budget = plan.planned_bytes <= plan.budget_bytes;
    return plan;
  }
  auto move_to = [&](size_t i, size_t point, const std::string& why) {
    spent -= hulls[i][at[i]].bytes;
    at[i] = point;
    spent += hulls[i][point].bytes;
    Set(&plan.layers[i], hulls[i][point], config.value_codec,
        absl::StrFormat("%s: %s, %d bytes", why, Describe(hulls[i][point]),
                        hulls[i][point].bytes));
  };
  // Critical regimes first: the densest option that fits.
  for (size_t i = 0; i < layers.size(); ++i) {
    if (!adaptive[i]) continue;
    const LayerInput& in = layers[i];
    const double change = std::fabs(in.gradient_norm - in.gradient_norm_start) /
                          std::max(in.gradient_norm_start, 1e-30);
    if (!(change > config.eta)) continue;
    adaptive[i] = false;
    const Option current = hulls[i][at[i]];
    Option best = current;
    for (const Option& o : Options(in, config, workers)) {
      if (o.density > best.density && spent - current.bytes + o.bytes <= plan.budget_bytes) {
        best = o;
      }
    }
    spent += best.bytes - current.bytes;
    Set(&plan.layers[i], best, config.value_codec,
        absl::StrFormat("critical (|g| changed %.0f%% > eta %.0f%%): %s, %d bytes",
                        100 * change, 100 * config.eta, Describe(best), best.bytes));
  }
  // Greedy steps along the hulls, best error saved per byte first.
  using Step = std::tuple<double, size_t>;  // (saving per byte, -layer index)
  auto step_of = [&](size_t i) {
    const Option& a = hulls[i][at[i]];
    const Option& b = hulls[i][at[i] + 1];
    return (a.error - b.error) / double(std::max<uint64_t>(1, b.bytes - a.bytes));
  };
  auto better = [](const Step& x, const Step& y) {
    if (std::get<0>(x) != std::get<0>(y)) return std::get<0>(x) < std::get<0>(y);
    return std::get<1>(x) > std::get<1>(y);  // lower layer index first
  };
  std::priority_queue<Step, std::vector<Step>, decltype(better)> steps(better);
  for (size_t i = 0; i < layers.size(); ++i) {
    if (adaptive[i] && at[i] + 1 < hulls[i].size()) steps.push({step_of(i), i});
  }
  while (!steps.empty()) {
    const size_t i = std::get<1>(steps.top());
    const uint64_t extra = hulls[i][at[i] + 1].bytes - hulls[i][at[i]].bytes;
    if (spent + extra > plan.budget_bytes) break;  // keep the order budget-free
    steps.pop();
    move_to(i, at[i] + 1, "adaptive");
    if (at[i] + 1 < hulls[i].size()) steps.push({step_of(i), i});
  }
  // Fill: what is left of the budget buys, layer by layer in the same
  // order, the densest option short of the next hull point that fits.
  // Those options save at most the hull's rate per byte, below the step
  // that stopped the greedy pass, so more budget still never means more
  // error.
  while (!steps.empty()) {
    const size_t i = std::get<1>(steps.top());
    steps.pop();
    const Option& current = hulls[i][at[i]];
    const Option& next = hulls[i][at[i] + 1];
    const Option* best = nullptr;
    for (const Option& o : Options(layers[i], config, workers)) {
      if (o.bytes > current.bytes && o.bytes < next.bytes && o.error < current.error &&
          spent - current.bytes + o.bytes <= plan.budget_bytes &&
          (best == nullptr || o.error < best->error)) {
        best = &o;
      }
    }
    if (best == nullptr) continue;
    const Option chosen = *best;
    spent += chosen.bytes - current.bytes;
    Set(&plan.layers[i], chosen, config.value_codec,
        absl::StrFormat("adaptive (fill): %s, %d bytes", Describe(chosen), chosen.bytes));
  }
  Total(&plan);
  plan.within_budget = plan.planned_bytes <= plan.budget_bytes;
  return plan;
}

}  // namespace leeway
