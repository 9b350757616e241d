// Communication-study models (leeway-worker --profile): the parameter
// tensors of GPT-2 small, BERT-base and ResNet-50 with their real shapes, in
// forward order, each with its share of the iteration's compute, and
// gradients drawn from a seeded heavy-tailed distribution. No real forward
// or backward runs: the trainer sleeps each tensor's share of a given GPU
// time per iteration, so what a study measures is the network.
//
// Compute shares: a dense or attention weight costs in proportion to its
// elements (FLOPs = 2 x tokens x elements, the same tokens for every layer);
// a convolution in proportion to elements x its output's spatial size; an
// embedding table costs like one row (its gradient is a scatter); biases
// and norms like their elements. Forward is a third of the time, backward
// two thirds.
#ifndef LEEWAY_WORKER_PROFILE_MODEL_H_
#define LEEWAY_WORKER_PROFILE_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

struct ProfileTensor {
  std::string name;
  std::vector<int64_t> shape;
  double cost = 0;  // relative compute, see above

  uint64_t elements() const;
};

// "gpt2-small" (124,439,808 parameters), "bert-base" (109,482,240, with the
// pooler), "resnet50" (25,557,032, batch-norm scales and shifts included) or
// "gpt3-xl" (GPT-3 XL: 24 layers of width 2048, context 2048,
// 1,315,723,264; for projections, too big to train here).
// "resnet50-fused-norms" is ResNet-50 with each batch norm's scale and
// shift in its convolution's tensor: the same elements and compute in 55
// tensors instead of 161, the message count that fusing small tensors
// into one message would give (a study's what-if, not a real layout).
absl::StatusOr<std::vector<ProfileTensor>> ProfileModel(const std::string& name);
std::vector<std::string> ProfileModelNames();

// A pool of gradient values, symmetric with a power-law tail (Pareto with
// alpha = 3 above a floor: finite variance, a few large entries per
// tensor, as real gradients have), scaled to RMS ~ 1e-3. Draw returns a
// window of it at an offset picked from `key`, so every (worker, clock,
// layer) gets a different gradient without generating one per iteration.
class GradientPool {
 public:
  // Holds at least `max_elements` + 2^20 values.
  GradientPool(uint64_t max_elements, uint64_t seed);
  absl::Span<const float> Draw(uint64_t elements, uint64_t key) const;
  // Everything Draw draws from (its spans lie inside).
  absl::Span<const float> values() const { return values_; }

 private:
  std::vector<float> values_;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_PROFILE_MODEL_H_
