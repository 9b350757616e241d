#include "server/optimizer.h"

#include <cmath>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

OptimizerConfig Config(OptimizerKind kind) {
  OptimizerConfig c;
  c.kind = kind;
  c.learning_rate = 0.1f;
  return c;
}

// Runs dense steps of one element starting at p = 1; returns p after each.
std::vector<float> Steps(const OptimizerConfig& c, const std::vector<float>& grads) {
  float p = 1.0f;
  std::vector<float> state(OptimizerStateSlots(c.kind), 0.0f);
  std::vector<float> out;
  for (size_t t = 0; t < grads.size(); ++t) {
    ApplyDense(c, t + 1, 1, &p, state.data(), &grads[t]);
    out.push_back(p);
  }
  return out;
}

TEST_CASE("optimizers match values computed by hand") {
  using Catch::Detail::Approx;
  auto near = [](float x) { return Approx(x).epsilon(1e-5); };

  auto sgd = Steps(Config(OptimizerKind::kSgd), {0.5f, 0.5f});
  CHECK(sgd[0] == near(0.95f));
  CHECK(sgd[1] == near(0.9f));

  auto momentum = Steps(Config(OptimizerKind::kMomentum), {1, 1, 1});
  CHECK(momentum[0] == near(0.9f));   // m = 1
  CHECK(momentum[1] == near(0.71f));  // m = 1.9
  CHECK(momentum[2] == near(0.439f)); // m = 2.71

  OptimizerConfig nesterov = Config(OptimizerKind::kMomentum);
  nesterov.nesterov = true;
  auto nag = Steps(nesterov, {1, 1});
  CHECK(nag[0] == near(0.81f));   // p -= 0.1 (1 + 0.9 * 1)
  CHECK(nag[1] == near(0.539f));  // p -= 0.1 (1 + 0.9 * 1.9)

  auto adam = Steps(Config(OptimizerKind::kAdam), {1.0f, -0.5f});
  CHECK(adam[0] == near(0.9f));        // bias-corrected: m^ = v^ = 1
  CHECK(adam[1] == near(0.873366f));   // m^ = .210526, v^ = .624812

  auto adagrad = Steps(Config(OptimizerKind::kAdagrad), {1.0f, 2.0f});
  CHECK(adagrad[0] == near(0.9f));
  CHECK(adagrad[1] == near(0.8105573f));  // a = 5

  OptimizerConfig decay = Config(OptimizerKind::kSgd);
  decay.weight_decay = 0.1f;
  CHECK(Steps(decay, {0.0f})[0] == near(0.99f));
}

TEST_CASE("sparse application touches only the given elements") {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum,
                             OptimizerKind::kAdam, OptimizerKind::kAdagrad}) {
    INFO(OptimizerName(kind));
    const OptimizerConfig c = Config(kind);
    std::vector<float> dense_p(4, 1.0f), sparse_p(4, 1.0f);
    std::vector<float> dense_s(4 * OptimizerStateSlots(kind), 0.0f);
    std::vector<float> sparse_s = dense_s;
    const std::vector<uint32_t> indices = {1, 3};
    const std::vector<float> values = {0.5f, -2.0f};
    const std::vector<float> grad = {0.0f, 0.5f, 0.0f, -2.0f};
    for (uint64_t step = 1; step <= 3; ++step) {
      ApplyDense(c, step, 4, dense_p.data(), dense_s.data(), grad.data());
      ApplySparse(c, step, 4, sparse_p.data(), sparse_s.data(), indices.data(),
                  values.data(), 2);
    }
    // Touched elements match the dense math exactly; untouched ones keep
    // their values and state (zero gradients change nothing in these
    // optimizers without weight decay, so dense agrees there too).
    CHECK(sparse_p == dense_p);
    CHECK(sparse_s == dense_s);
    CHECK(sparse_p[0] == 1.0f);
    CHECK(sparse_p[2] == 1.0f);
  }
}

TEST_CASE("lazy momentum leaves untouched state alone") {
  OptimizerConfig c = Config(OptimizerKind::kMomentum);
  std::vector<float> p = {1.0f, 1.0f}, m = {0.5f, 0.5f};
  const uint32_t index = 0;
  const float value = 1.0f;
  ApplySparse(c, 1, 2, p.data(), m.data(), &index, &value, 1);
  CHECK(m[0] == Approx(1.45f));
  CHECK(m[1] == 0.5f);  // a dense step would have decayed it
  CHECK(p[1] == 1.0f);
}

TEST_CASE("bad hyper-parameters are refused") {
  OptimizerConfig c = Config(OptimizerKind::kAdam);
  CHECK(ValidateOptimizer(c).ok());
  c.learning_rate = NAN;
  CHECK_FALSE(ValidateOptimizer(c).ok());
  c = Config(OptimizerKind::kAdam);
  c.beta2 = 1.0f;
  CHECK_FALSE(ValidateOptimizer(c).ok());
  c = Config(OptimizerKind::kAdagrad);
  c.epsilon = 0.0f;
  CHECK_FALSE(ValidateOptimizer(c).ok());
  c = Config(OptimizerKind::kMomentum);
  c.momentum = -0.1f;
  CHECK_FALSE(ValidateOptimizer(c).ok());
}

}  // namespace
}  // namespace leeway
