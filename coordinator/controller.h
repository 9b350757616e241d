// The adaptive compression controller (DESIGN.md, "The adaptive
// controller"): from one window of measurements, each layer's codec and
// density for the next window. A pure function of its inputs - no clock,
// no I/O - so that it is tested with tables and logged with what it saw.
//
// Model. Bytes a worker moves per iteration for layer l at density d: its
// push (kernels' CompressedSize: top-k indices and values, or the dense
// chunk when that is not larger) plus its pull (the union of W workers'
// selections as a delta, or the dense chunk when smaller). Expected error:
// E_l(d) = |g_l|^2 (1 - d^b_l), the gradient energy top-k leaves out, with
// b_l in [0.05, 1] fitted to the residual ratio measured at the current
// density (b = 0.5 when that density is dense: no information yet).
//
// Decision (policy "adaptive"):
//   1. Small layers (< min_compress_elems) go dense; their bytes come first.
//   2. Budget = bandwidth x overlap time (bytes a worker can move while its
//      backward pass runs).
//   3. Every other layer starts at its cheapest option; layers in a
//      critical regime (|g| changed by more than eta, relative, over the
//      window) then take the densest option that still fits, in layer order.
//   4. The rest improve greedily, best error saved per byte first, along
//      each layer's lower convex hull of (bytes, error) options, stopping
//      at the first step that does not fit; then what is left buys, in the
//      same order, the densest option short of each layer's next hull
//      point. The order does not depend on the budget and the fill saves
//      less per byte than the step that stopped the greedy pass, so a
//      larger budget never gives a larger total expected error; no step
//      breaks the budget, so the plan stays within it whenever the
//      cheapest plan does.
//   5. During warm-up (clock < warmup) density is at least
//      d_min^(clock / warmup), rounded up to the ladder: dense at first,
//      decaying exponentially; the budget does not bind then.
// Policies "none" (all dense) and "fixed:<codec>[:<density>]" bypass it.
#ifndef LEEWAY_COORDINATOR_CONTROLLER_H_
#define LEEWAY_COORDINATOR_CONTROLLER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/codec.h"

namespace leeway {

struct ControllerPolicy {
  enum class Kind { kNone, kFixed, kAdaptive };
  Kind kind = Kind::kAdaptive;
  CodecId codec = CodecId::kNone;  // kFixed
  float density = 1.0f;            // kFixed, sparse codecs
};

// "none", "adaptive", "fixed:<codec>" or "fixed:<codec>:<density>".
absl::StatusOr<ControllerPolicy> ParsePolicy(const std::string& text);
std::string PolicyName(const ControllerPolicy& policy);

struct ControllerConfig {
  std::vector<float> ladder = {1.0f, 0.5f, 0.25f, 0.1f, 0.05f, 0.01f, 0.005f, 0.001f};
  double eta = 0.5;
  uint32_t warmup = 0;  // clocks; 0: no warm-up
  uint64_t min_compress_elems = 16384;
  CodecId value_codec = CodecId::kNone;  // how sparse values travel
};

struct LayerInput {
  uint32_t layer = 0;
  uint64_t elements = 0;
  double gradient_norm = 0;        // at the window's end
  double gradient_norm_start = 0;  // at the window's start
  double residual_ratio = 0;       // |residual| / |gradient|
  float current_density = 1.0f;    // where residual_ratio was measured
};

struct JobInput {
  uint32_t clock = 0;
  uint32_t workers = 1;
  double bandwidth_bytes_per_sec = 0;  // per worker
  double overlap_seconds = 0;          // backward time per iteration
};

struct LayerDecision {
  uint32_t layer = 0;
  CodecId codec = CodecId::kNone;
  float density = 1.0f;
  CodecId value_codec = CodecId::kNone;
  uint64_t bytes = 0;        // push + pull per iteration, per worker
  double expected_error = 0;
  std::string reason;
};

struct ControllerPlan {
  std::vector<LayerDecision> layers;  // in the order of the inputs
  uint64_t budget_bytes = 0;
  uint64_t planned_bytes = 0;
  double expected_error = 0;
  bool within_budget = true;
};

ControllerPlan DecidePlan(const ControllerPolicy& policy,
                          const ControllerConfig& config, const JobInput& job,
                          const std::vector<LayerInput>& layers);

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_CONTROLLER_H_
