#include "server/optimizer.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace leeway {
namespace {

// The update of one element: the same code serves dense and sparse.
struct Step {
  OptimizerConfig c;
  float correction1 = 1.0f;  // Adam: 1 - b1^t
  float correction2 = 1.0f;  // Adam: 1 - b2^t
  size_t n = 0;

  inline void operator()(size_t i, float g, float* params, float* state) const {
    float& p = params[i];
    g += c.weight_decay * p;
    switch (c.kind) {
      case OptimizerKind::kSgd:
        p -= c.learning_rate * g;
        return;
      case OptimizerKind::kMomentum: {
        float& m = state[i];
        m = c.momentum * m + g;
        p -= c.learning_rate * (c.nesterov ? g + c.momentum * m : m);
        return;
      }
      case OptimizerKind::kAdam: {
        float& m = state[i];
        float& v = state[n + i];
        m = c.beta1 * m + (1.0f - c.beta1) * g;
        v = c.beta2 * v + (1.0f - c.beta2) * g * g;
        const float m_hat = m / correction1;
        const float v_hat = v / correction2;
        p -= c.learning_rate * m_hat / (std::sqrt(v_hat) + c.epsilon);
        return;
      }
      case OptimizerKind::kAdagrad: {
        float& a = state[i];
        a += g * g;
        p -= c.learning_rate * g / (std::sqrt(a) + c.epsilon);
        return;
      }
    }
  }
};

Step MakeStep(const OptimizerConfig& config, uint64_t step, size_t n) {
  Step s;
  s.c = config;
  s.n = n;
  if (config.kind == OptimizerKind::kAdam) {
    const double t = static_cast<double>(step);
    s.correction1 = static_cast<float>(1.0 - std::pow(config.beta1, t));
    s.correction2 = static_cast<float>(1.0 - std::pow(config.beta2, t));
  }
  return s;
}

}  // namespace

const char* OptimizerName(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kMomentum: return "momentum";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdagrad: return "adagrad";
  }
  return "unknown";
}

int OptimizerStateSlots(OptimizerKind kind) {
  switch (kind) {
    case OptimizerKind::kSgd: return 0;
    case OptimizerKind::kMomentum: return 1;
    case OptimizerKind::kAdam: return 2;
    case OptimizerKind::kAdagrad: return 1;
  }
  return 0;
}

absl::Status ValidateOptimizer(const OptimizerConfig& c) {
  auto finite = [](float x) { return std::isfinite(x); };
  if (!finite(c.learning_rate) || c.learning_rate < 0.0f) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate ", c.learning_rate, " must be >= 0"));
  }
  if (!finite(c.weight_decay) || c.weight_decay < 0.0f) {
    return absl::InvalidArgumentError("weight decay must be finite and >= 0");
  }
  if (c.kind == OptimizerKind::kMomentum &&
      !(c.momentum >= 0.0f && c.momentum < 1.0f)) {
    return absl::InvalidArgumentError("momentum must be in [0, 1)");
  }
  if (c.kind == OptimizerKind::kAdam &&
      !(c.beta1 >= 0.0f && c.beta1 < 1.0f && c.beta2 >= 0.0f && c.beta2 < 1.0f)) {
    return absl::InvalidArgumentError("Adam betas must be in [0, 1)");
  }
  if ((c.kind == OptimizerKind::kAdam || c.kind == OptimizerKind::kAdagrad) &&
      !(finite(c.epsilon) && c.epsilon > 0.0f)) {
    return absl::InvalidArgumentError("epsilon must be finite and > 0");
  }
  return absl::OkStatus();
}

void ApplyDense(const OptimizerConfig& config, uint64_t step, size_t n,
                float* params, float* state, const float* grad) {
  const Step s = MakeStep(config, step, n);
  if (config.kind == OptimizerKind::kSgd && config.weight_decay == 0.0f) {
    const float lr = config.learning_rate;  // the common case, vectorized
    for (size_t i = 0; i < n; ++i) params[i] -= lr * grad[i];
    return;
  }
  for (size_t i = 0; i < n; ++i) s(i, grad[i], params, state);
}

void ApplySparse(const OptimizerConfig& config, uint64_t step, size_t n,
                 float* params, float* state, const uint32_t* indices,
                 const float* values, size_t count) {
  const Step s = MakeStep(config, step, n);
  for (size_t j = 0; j < count; ++j) s(indices[j], values[j], params, state);
}

}  // namespace leeway
