#include "server/optimizer.h"

#include <cmath>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kernels/indexed_prefetch.h"

namespace leeway {
namespace {

// The constants of one step.
struct Step {
  OptimizerConfig c;
  float correction1 = 1.0f;  // Adam: 1 - b1^t
  float correction2 = 1.0f;  // Adam: 1 - b2^t
  size_t n = 0;
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

// The update of element i: one function per optimizer, shared by the dense
// and the sparse loops. Templates, so that each loop has one body (and the
// dense ones vectorize).
template <OptimizerKind kKind>
inline void Update(const Step& s, size_t i, float g, float* __restrict params,
                   float* __restrict state) {
  const OptimizerConfig& c = s.c;
  float& p = params[i];
  g += c.weight_decay * p;
  if constexpr (kKind == OptimizerKind::kSgd) {
    p -= c.learning_rate * g;
  } else if constexpr (kKind == OptimizerKind::kMomentum) {
    float& m = state[i];
    m = c.momentum * m + g;
    p -= c.learning_rate * (c.nesterov ? g + c.momentum * m : m);
  } else if constexpr (kKind == OptimizerKind::kAdam) {
    float& m = state[i];
    float& v = state[s.n + i];
    m = c.beta1 * m + (1.0f - c.beta1) * g;
    v = c.beta2 * v + (1.0f - c.beta2) * g * g;
    p -= c.learning_rate * (m / s.correction1) / (std::sqrt(v / s.correction2) + c.epsilon);
  } else {
    float& a = state[i];
    a += g * g;
    p -= c.learning_rate * g / (std::sqrt(a) + c.epsilon);
  }
}

template <OptimizerKind kKind>
void DenseLoop(const Step& s, float* params, float* state, const float* grad) {
  for (size_t i = 0; i < s.n; ++i) Update<kKind>(s, i, grad[i], params, state);
}

template <OptimizerKind kKind>
void SparseLoop(const Step& s, float* params, float* state,
                const uint32_t* indices, const float* values, size_t count) {
  for (size_t j = 0; j < count; ++j) {
    PrefetchIndexed(params, 0, indices, j, count);
    if constexpr (kKind != OptimizerKind::kSgd) PrefetchIndexed(state, 0, indices, j, count);
    if constexpr (kKind == OptimizerKind::kAdam) PrefetchIndexed(state, s.n, indices, j, count);
    Update<kKind>(s, indices[j], values[j], params, state);
  }
}

// Calls fn.template operator()<kKind>() for the config's optimizer.
template <typename Fn>
void Dispatch(OptimizerKind kind, Fn fn) {
  switch (kind) {
    case OptimizerKind::kSgd: return fn(std::integral_constant<OptimizerKind, OptimizerKind::kSgd>());
    case OptimizerKind::kMomentum:
      return fn(std::integral_constant<OptimizerKind, OptimizerKind::kMomentum>());
    case OptimizerKind::kAdam: return fn(std::integral_constant<OptimizerKind, OptimizerKind::kAdam>());
    case OptimizerKind::kAdagrad:
      return fn(std::integral_constant<OptimizerKind, OptimizerKind::kAdagrad>());
  }
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
  Dispatch(config.kind, [&](auto kind) {
    DenseLoop<decltype(kind)::value>(s, params, state, grad);
  });
}

void ApplySparse(const OptimizerConfig& config, uint64_t step, size_t n,
                 float* params, float* state, const uint32_t* indices,
                 const float* values, size_t count) {
  const Step s = MakeStep(config, step, n);
  Dispatch(config.kind, [&](auto kind) {
    SparseLoop<decltype(kind)::value>(s, params, state, indices, values, count);
  });
}

}  // namespace leeway
