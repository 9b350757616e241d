// A multilayer perceptron classifier with real forward and backward passes
// on the CPU through OpenBLAS: dense layers with ReLU between them and a
// softmax cross-entropy loss. Each dense layer has two trainable tensors,
// weights (out x in, row-major) and biases (out), numbered 2i and 2i+1.
//
// Train computes the loss and the gradients of a batch (mean over the
// batch), handing each tensor's gradient to a callback as soon as backward
// has produced it, last layer first, so that a worker can push it while
// backward goes on. Gradient buffers stay valid until the next Train.
// Parameters are read from params(i), which a worker's pulls write into.
// Not thread-safe.
#ifndef LEEWAY_WORKER_MLP_H_
#define LEEWAY_WORKER_MLP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace leeway {

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;
  size_t elements = 0;
};

class Mlp {
 public:
  // widths: input, hidden..., classes (at least two entries, all > 0).
  static absl::StatusOr<Mlp> Create(std::vector<int> widths);

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  absl::Span<float> params(size_t tensor) { return absl::MakeSpan(params_[tensor]); }
  absl::Span<const float> params(size_t tensor) const { return params_[tensor]; }
  // He-uniform weights and zero biases from `seed`; the same everywhere.
  void Initialize(uint64_t seed);

  using GradientReady = std::function<void(size_t tensor, absl::Span<const float> gradient)>;
  // x: batch x input, labels in [0, classes). Returns the mean loss;
  // INVALID_ARGUMENT when the sizes or labels do not fit the model.
  absl::StatusOr<double> Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                               const GradientReady& ready);
  // How long the last Train's backward pass took.
  double last_backward_ms() const { return last_backward_ms_; }
  // The fraction of `labels` the model predicts.
  absl::StatusOr<double> Accuracy(absl::Span<const float> x, absl::Span<const uint8_t> labels);
  // The mean loss without gradients.
  absl::StatusOr<double> Loss(absl::Span<const float> x, absl::Span<const uint8_t> labels);
  // INVALID_ARGUMENT unless x holds labels.size() inputs and every label
  // is a class.
  absl::Status CheckBatch(absl::Span<const float> x, absl::Span<const uint8_t> labels) const;
  const std::vector<int>& widths() const { return widths_; }

 private:
  explicit Mlp(std::vector<int> widths);
  // Fills activations_ for a batch; returns the output logits.
  const std::vector<float>& Forward(absl::Span<const float> x, int batch);
  double SoftmaxLoss(absl::Span<const uint8_t> labels, int batch, std::vector<float>* d);

  std::vector<int> widths_;
  std::vector<TensorInfo> tensors_;
  std::vector<std::vector<float>> params_;
  std::vector<std::vector<float>> grads_;
  std::vector<std::vector<float>> activations_;  // [0] input copy, then per layer
  std::vector<float> delta_, next_delta_;
  double last_backward_ms_ = 0;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_MLP_H_
