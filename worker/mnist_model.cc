#include "worker/mnist_model.h"

#include <utility>

#include "worker/device_mlp.h"

namespace leeway {
namespace {

class HostModel : public MnistModel {
 public:
  explicit HostModel(Mlp mlp) : mlp_(std::move(mlp)), grads_(mlp_.tensors().size()) {}

  const std::vector<TensorInfo>& tensors() const override { return mlp_.tensors(); }
  absl::Status Initialize(uint64_t seed) override {
    mlp_.Initialize(seed);
    return absl::OkStatus();
  }
  absl::Span<const float> initial(size_t tensor) const override { return mlp_.params(tensor); }
  Ticket Pull(Worker& worker, size_t tensor) override {
    return worker.Pull(static_cast<uint32_t>(tensor), mlp_.params(tensor));
  }
  absl::StatusOr<double> Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                               const std::function<void(size_t)>& ready) override {
    return mlp_.Train(x, labels, [&](size_t t, absl::Span<const float> g) {
      grads_[t] = g;  // the model keeps it until the next Train
      if (ready) ready(t);
    });
  }
  Ticket Push(Worker& worker, size_t tensor) override {
    return worker.Push(static_cast<uint32_t>(tensor), grads_[tensor]);
  }
  double last_backward_ms() const override { return mlp_.last_backward_ms(); }
  absl::StatusOr<double> Accuracy(absl::Span<const float> x,
                                  absl::Span<const uint8_t> labels) override {
    return mlp_.Accuracy(x, labels);
  }
  absl::StatusOr<double> Loss(absl::Span<const float> x,
                              absl::Span<const uint8_t> labels) override {
    return mlp_.Loss(x, labels);
  }

 private:
  Mlp mlp_;
  std::vector<absl::Span<const float>> grads_;
};

class DeviceModel : public MnistModel {
 public:
  explicit DeviceModel(std::unique_ptr<DeviceMlp> mlp)
      : mlp_(std::move(mlp)), grads_(mlp_->tensors().size(), nullptr) {}

  const std::vector<TensorInfo>& tensors() const override { return mlp_->tensors(); }
  absl::Status Initialize(uint64_t seed) override { return mlp_->Initialize(seed); }
  absl::Span<const float> initial(size_t tensor) const override { return mlp_->initial(tensor); }
  Ticket Pull(Worker& worker, size_t tensor) override {
    return worker.PullDevice(static_cast<uint32_t>(tensor), mlp_->params(tensor), mlp_->stream());
  }
  absl::StatusOr<double> Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                               const std::function<void(size_t)>& ready) override {
    return mlp_->Train(x, labels, [&](size_t t, const float* g) {
      grads_[t] = g;
      if (ready) ready(t);
    });
  }
  Ticket Push(Worker& worker, size_t tensor) override {
    return worker.PushDevice(static_cast<uint32_t>(tensor), grads_[tensor], mlp_->stream());
  }
  double last_backward_ms() const override { return mlp_->last_backward_ms(); }
  absl::StatusOr<double> Accuracy(absl::Span<const float> x,
                                  absl::Span<const uint8_t> labels) override {
    return mlp_->Accuracy(x, labels);
  }
  absl::StatusOr<double> Loss(absl::Span<const float> x,
                              absl::Span<const uint8_t> labels) override {
    return mlp_->Loss(x, labels);
  }

 private:
  std::unique_ptr<DeviceMlp> mlp_;
  std::vector<const float*> grads_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MnistModel>> MnistModel::Create(std::vector<int> widths,
                                                               bool device) {
  if (device) {
    absl::StatusOr<std::unique_ptr<DeviceMlp>> mlp = DeviceMlp::Create(std::move(widths));
    if (!mlp.ok()) return mlp.status();
    return std::unique_ptr<MnistModel>(new DeviceModel(*std::move(mlp)));
  }
  absl::StatusOr<Mlp> mlp = Mlp::Create(std::move(widths));
  if (!mlp.ok()) return mlp.status();
  return std::unique_ptr<MnistModel>(new HostModel(*std::move(mlp)));
}

}  // namespace leeway
