// The MNIST trainer's model where --gradients puts it: the MLP on
// OpenBLAS with host buffers (mlp.h), or on cuBLAS with device buffers
// (device_mlp.h), together with the worker calls that move its tensors
// (Pull/Push or PullDevice/PushDevice), so that the training loop is the
// same for both. Not thread-safe.
#ifndef LEEWAY_WORKER_MNIST_MODEL_H_
#define LEEWAY_WORKER_MNIST_MODEL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "worker/mlp.h"
#include "worker/worker.h"

namespace leeway {

class MnistModel {
 public:
  // `device`: on the GPU (FAILED_PRECONDITION where there is none).
  static absl::StatusOr<std::unique_ptr<MnistModel>> Create(std::vector<int> widths, bool device);
  virtual ~MnistModel() = default;

  virtual const std::vector<TensorInfo>& tensors() const = 0;
  // Mlp::Initialize's values; initial(t) is tensor t's, in host memory.
  virtual absl::Status Initialize(uint64_t seed) = 0;
  virtual absl::Span<const float> initial(size_t tensor) const = 0;

  // A pull of tensor t into the model's parameters.
  virtual Ticket Pull(Worker& worker, size_t tensor) = 0;
  // Trains on a batch (host memory); `ready(t)` when tensor t's gradient
  // is there, last layer first, for Push.
  virtual absl::StatusOr<double> Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                                       const std::function<void(size_t)>& ready) = 0;
  // A push of tensor t's gradient from the last Train.
  virtual Ticket Push(Worker& worker, size_t tensor) = 0;
  virtual double last_backward_ms() const = 0;
  virtual absl::StatusOr<double> Accuracy(absl::Span<const float> x,
                                          absl::Span<const uint8_t> labels) = 0;
  virtual absl::StatusOr<double> Loss(absl::Span<const float> x,
                                      absl::Span<const uint8_t> labels) = 0;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_MNIST_MODEL_H_
