// The MNIST MLP (mlp.h) on a GPU: the same layers, initial values, loss
// and gradients, with parameters, activations and gradients in device
// memory and the products on cuBLAS (fp32, no TF32). Train takes a batch
// from host memory, uploads it, and hands each tensor's gradient to the
// callback as a device pointer as soon as backward has produced it, last
// layer first, in the order of stream(): a worker pushes it from there
// (Worker::PushDevice with that stream). Gradient buffers stay valid until
// the next Train; parameters are read from params(i), which a worker's
// device pulls write into. Loss, gradients and accuracy match the CPU
// model's up to the order of float sums (the GPU tests check it).
//
// Available in CUDA builds on a machine with a usable GPU; elsewhere
// Create fails with FAILED_PRECONDITION. Not thread-safe.
#ifndef LEEWAY_WORKER_DEVICE_MLP_H_
#define LEEWAY_WORKER_DEVICE_MLP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "kernels/device_memory.h"
#include "worker/mlp.h"

namespace leeway {

class DeviceMlp {
 public:
  // widths as for Mlp::Create.
  static absl::StatusOr<std::unique_ptr<DeviceMlp>> Create(std::vector<int> widths);
  ~DeviceMlp();
  DeviceMlp(const DeviceMlp&) = delete;
  DeviceMlp& operator=(const DeviceMlp&) = delete;

  const std::vector<TensorInfo>& tensors() const { return host_.tensors(); }
  // The stream every kernel of this model runs on.
  void* stream() const { return stream_.get(); }
  float* params(size_t tensor) { return params_[tensor].as<float>(); }

  // Mlp::Initialize's values from `seed`, on the device; initial(t) keeps
  // a host copy (a worker offers them when it registers).
  absl::Status Initialize(uint64_t seed);
  absl::Span<const float> initial(size_t tensor) const { return host_.params(tensor); }
  // Host copies and uploads, for tests and checks.
  absl::StatusOr<std::vector<float>> Params(size_t tensor) const;
  absl::StatusOr<std::vector<float>> Gradient(size_t tensor) const;
  absl::Status SetParams(size_t tensor, absl::Span<const float> values);

  using GradientReady = std::function<void(size_t tensor, const float* gradient)>;
  // As Mlp::Train, x and labels in host memory, gradients on the device.
  absl::StatusOr<double> Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                               const GradientReady& ready);
  // How long the last Train's backward pass took, until its kernels ended.
  double last_backward_ms() const { return last_backward_ms_; }
  absl::StatusOr<double> Accuracy(absl::Span<const float> x, absl::Span<const uint8_t> labels);
  absl::StatusOr<double> Loss(absl::Span<const float> x, absl::Span<const uint8_t> labels);

 private:
  // A device buffer that grows to what a batch needs.
  struct Growing {
    DeviceBuffer buffer;
    size_t bytes = 0;
  };

  explicit DeviceMlp(Mlp host) : host_(std::move(host)) {}
  absl::Status Allocate();
  absl::StatusOr<float*> Ensure(Growing* g, size_t bytes);
  // Uploads a batch and computes its logits (the last activation).
  absl::StatusOr<const float*> Forward(absl::Span<const float> x, absl::Span<const uint8_t> labels);
  // Summed loss and correct count of the batch Forward left, with the
  // output's delta into delta_ when `delta`.
  absl::Status Evaluate(int batch, bool delta, double* loss_sum, int* correct);
  absl::Status Backward(int batch, const GradientReady& ready);
  // The summed loss and correct count over a set, in batches of 256.
  absl::Status Score(absl::Span<const float> x, absl::Span<const uint8_t> labels, double* loss_sum,
                     int* correct);

  Mlp host_;  // widths, tensors, checks, initial values
  DeviceStream stream_;
  void* blas_ = nullptr;
  std::vector<DeviceBuffer> params_, grads_;
  std::vector<Growing> activations_;  // [0] the input, then per layer
  Growing labels_, delta_, next_delta_;
  double last_backward_ms_ = 0;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_DEVICE_MLP_H_
