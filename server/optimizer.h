// Server-side optimizers over the fp32 parameters of one chunk: SGD,
// momentum (optionally Nesterov), Adam and AdaGrad, with L2 weight decay.
//
// Dense application updates every element. Sparse application (for sparse
// payloads) touches only the given indices, O(nnz): state of untouched
// elements is left as it was ("lazy" momentum/Adam/AdaGrad, as in
// TensorFlow's LazyAdam), and weight decay applies to touched elements only.
// Adam's bias correction uses the chunk's step count (applies so far,
// this one included), the same for every element.
//
// Math, for gradient g (plus weight_decay * p), learning rate lr:
//   SGD       p -= lr g
//   momentum  m = mu m + g;  p -= lr (nesterov ? g + mu m : m)
//   Adam      m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
//             p -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   AdaGrad   a += g^2;  p -= lr g / (sqrt(a) + eps)
// Pure functions of their arguments; callers serialize per chunk.
#ifndef LEEWAY_SERVER_OPTIMIZER_H_
#define LEEWAY_SERVER_OPTIMIZER_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"

namespace leeway {

enum class OptimizerKind { kSgd, kMomentum, kAdam, kAdagrad };

const char* OptimizerName(OptimizerKind kind);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kSgd;
  float learning_rate = 0.01f;
  float momentum = 0.9f;
  bool nesterov = false;
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
};

// Per-element state floats: SGD 0, momentum 1, Adam 2 (m, v), AdaGrad 1.
int OptimizerStateSlots(OptimizerKind kind);

// Refuses non-finite or out-of-range hyper-parameters.
absl::Status ValidateOptimizer(const OptimizerConfig& config);

// `state` holds OptimizerStateSlots(kind) arrays of n floats, one after the
// other (slot s of element i at state[s * n + i]). `step` >= 1.
void ApplyDense(const OptimizerConfig& config, uint64_t step, size_t n,
                float* params, float* state, const float* grad);

// Indices must be < n (the chunk's size), validated by the caller.
void ApplySparse(const OptimizerConfig& config, uint64_t step, size_t n,
                 float* params, float* state, const uint32_t* indices,
                 const float* values, size_t count);

}  // namespace leeway

#endif  // LEEWAY_SERVER_OPTIMIZER_H_
