#include "coordinator/controller.h"

#include <random>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

LayerInput Layer(uint32_t id, uint64_t elements, double norm = 1.0) {
  LayerInput in;
  in.layer = id;
  in.elements = elements;
  in.gradient_norm = norm;
  in.gradient_norm_start = norm;
  return in;
}

JobInput Job(double budget_bytes, uint32_t clock = 1000) {
  JobInput job;
  job.clock = clock;
  job.workers = 4;
  job.bandwidth_bytes_per_sec = budget_bytes;  // x 1 s of overlap
  job.overlap_seconds = 1.0;
  return job;
}

ControllerPolicy Adaptive() { return ControllerPolicy(); }

TEST_CASE("policies parse, and print back") {
  for (const char* text : {"none", "adaptive", "fixed:int8", "fixed:topk:0.01",
                           "fixed:randomk:0.5", "fixed:sign"}) {
    auto p = ParsePolicy(text);
    REQUIRE(p.ok());
    CHECK(PolicyName(*p) == text);
  }
  for (const char* bad : {"", "bogus", "fixed", "fixed:topk", "fixed:topk:0",
                          "fixed:topk:1.5", "fixed:int8:0.5", "fixed:nope:0.1",
                          "fixed:topk:x"}) {
    INFO(bad);
    CHECK(ParsePolicy(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("small layers stay dense and count first") {
  const auto plan = DecidePlan(Adaptive(), ControllerConfig(), Job(0),
                               {Layer(0, 100), Layer(1, 1 << 20)});
  CHECK(plan.layers[0].codec == CodecId::kNone);
  CHECK(plan.layers[0].reason.find("small") != std::string::npos);
  CHECK(plan.layers[1].codec == CodecId::kTopK);
  CHECK(plan.layers[1].density == 0.001f);  // no budget: the cheapest
  CHECK_FALSE(plan.within_budget);
}

TEST_CASE("an ample budget sends everything dense") {
  const auto plan = DecidePlan(Adaptive(), ControllerConfig(), Job(1e12),
                               {Layer(0, 1 << 20), Layer(1, 1 << 22)});
  for (const auto& d : plan.layers) CHECK(d.codec == CodecId::kNone);
  CHECK(plan.expected_error == 0.0);
  CHECK(plan.within_budget);
}

TEST_CASE("a tight budget goes to the layers with more gradient energy") {
  const std::vector<LayerInput> layers = {Layer(0, 1 << 20, 10.0), Layer(1, 1 << 20, 0.1)};
  const auto plan = DecidePlan(Adaptive(), ControllerConfig(), Job(2e6), layers);
  CHECK(plan.within_budget);
  CHECK(plan.planned_bytes <= plan.budget_bytes);
  CHECK(plan.layers[0].density > plan.layers[1].density);
}

TEST_CASE("a critical layer gets the densest setting that fits") {
  std::vector<LayerInput> layers = {Layer(0, 1 << 20), Layer(1, 1 << 20)};
  const auto calm = DecidePlan(Adaptive(), ControllerConfig(), Job(3e6), layers);
  layers[1].gradient_norm = 2.0;  // doubled: a 100% change > eta 50%
  const auto critical = DecidePlan(Adaptive(), ControllerConfig(), Job(3e6), layers);
  CHECK(critical.layers[1].reason.find("critical") != std::string::npos);
  CHECK(critical.layers[1].density > calm.layers[1].density);
  CHECK(critical.within_budget);
}

TEST_CASE("warm-up decays density from dense") {
  ControllerConfig config;
  config.warmup = 100;
  const std::vector<LayerInput> layers = {Layer(0, 1 << 20)};
  CHECK(DecidePlan(Adaptive(), config, Job(0, 0), layers).layers[0].codec == CodecId::kNone);
  // Half way: at least 0.001^0.5 = 0.032, rounded up to the ladder: 0.05.
  const auto half = DecidePlan(Adaptive(), config, Job(0, 50), layers);
  CHECK(half.layers[0].density == 0.05f);
  CHECK(half.layers[0].reason.find("warm-up") != std::string::npos);
  const auto after = DecidePlan(Adaptive(), config, Job(0, 100), layers);
  CHECK(after.layers[0].density == 0.001f);
}

TEST_CASE("the measured residual ratio shapes the error model") {
  // Same energy; one layer loses little at its density (flat tail), the
  // other a lot: the budget goes to the one that loses a lot.
  std::vector<LayerInput> layers = {Layer(0, 1 << 20), Layer(1, 1 << 20)};
  layers[0].current_density = 0.01f;
  layers[0].residual_ratio = 0.2;
  layers[1].current_density = 0.01f;
  layers[1].residual_ratio = 3.0;
  const auto plan = DecidePlan(Adaptive(), ControllerConfig(), Job(3e6), layers);
  CHECK(plan.layers[1].density > plan.layers[0].density);
}

TEST_CASE("policies none and fixed bypass the controller") {
  const std::vector<LayerInput> layers = {Layer(0, 100), Layer(1, 1 << 20)};
  const auto none = DecidePlan(*ParsePolicy("none"), ControllerConfig(), Job(0), layers);
  for (const auto& d : none.layers) CHECK(d.codec == CodecId::kNone);
  const auto fixed =
      DecidePlan(*ParsePolicy("fixed:topk:0.01"), ControllerConfig(), Job(0), layers);
  CHECK(fixed.layers[0].codec == CodecId::kNone);  // small
  CHECK(fixed.layers[1].codec == CodecId::kTopK);
  CHECK(fixed.layers[1].density == 0.01f);
  const auto int8 = DecidePlan(*ParsePolicy("fixed:int8"), ControllerConfig(), Job(0), layers);
  CHECK(int8.layers[1].codec == CodecId::kInt8);
}

// Random jobs: within budget whenever the cheapest plan is; more budget
// never more expected error.
TEST_CASE("properties: budget respected, error monotone in budget") {
  std::mt19937 rng(11);
  std::uniform_int_distribution<uint64_t> size(20000, 5000000);
  std::uniform_real_distribution<double> norm(0.01, 10.0), ratio(0.0, 4.0);
  std::uniform_int_distribution<int> density(0, 7);
  const ControllerConfig config;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<LayerInput> layers;
    const int count = 1 + static_cast<int>(rng() % 12);
    for (int l = 0; l < count; ++l) {
      LayerInput in = Layer(l, size(rng), norm(rng));
      in.current_density = config.ladder[density(rng)];
      in.residual_ratio = ratio(rng);
      layers.push_back(in);
    }
    const auto cheapest = DecidePlan(Adaptive(), config, Job(0), layers);
    double previous_error = 1e300;
    for (double budget = 0; budget < 1e8; budget = budget * 1.7 + 1e4) {
      const auto plan = DecidePlan(Adaptive(), config, Job(budget), layers);
      if (cheapest.planned_bytes <= budget) {
        REQUIRE(plan.planned_bytes <= budget);
        REQUIRE(plan.within_budget);
      }
      REQUIRE(plan.expected_error <= previous_error + 1e-9 * previous_error);
      previous_error = plan.expected_error;
    }
  }
}

}  // namespace
}  // namespace leeway
