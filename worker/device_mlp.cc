#include "worker/device_mlp.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/gpu.h"

#if LEEWAY_HAVE_CUDA
#include "kernels/cuda/codec_kernels.h"
#include "kernels/cuda/mlp_kernels.h"
#endif

namespace leeway {

#if LEEWAY_HAVE_CUDA

namespace {

constexpr size_t kEvalBatch = 256;  // as the CPU model evaluates

absl::Status BlasStatus(int code, const char* what) {
  if (code == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cuda::BlasErrorString(code)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceMlp>> DeviceMlp::Create(std::vector<int> widths) {
  if (UsableGpus() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("no usable GPU: ", Gpus().reason));
  }
  absl::StatusOr<Mlp> host = Mlp::Create(std::move(widths));
  if (!host.ok()) return host.status();
  std::unique_ptr<DeviceMlp> mlp(new DeviceMlp(*std::move(host)));
  absl::Status allocated = mlp->Allocate();
  if (!allocated.ok()) return allocated;
  return mlp;
}

absl::Status DeviceMlp::Allocate() {
  absl::StatusOr<DeviceStream> stream = DeviceStream::Create();
  if (!stream.ok()) return stream.status();
  stream_ = *std::move(stream);
  absl::Status blas = BlasStatus(cuda::CreateBlas(&blas_, stream_.get()), "cuBLAS");
  if (!blas.ok()) return blas;
  for (const TensorInfo& t : tensors()) {
    params_.emplace_back(sizeof(float) * t.elements, stream_.get());
    grads_.emplace_back(sizeof(float) * t.elements, stream_.get());
    if (!params_.back().status().ok()) return params_.back().status();
    if (!grads_.back().status().ok()) return grads_.back().status();
  }
  activations_.resize(host_.widths().size());
  return absl::OkStatus();
}

DeviceMlp::~DeviceMlp() {
  if (blas_ != nullptr) cuda::DestroyBlas(blas_);
}

absl::StatusOr<float*> DeviceMlp::Ensure(Growing* g, size_t bytes) {
  if (g->bytes < bytes) {
    g->buffer = DeviceBuffer(bytes, stream_.get());
    if (!g->buffer.status().ok()) return g->buffer.status();
    g->bytes = bytes;
  }
  return g->buffer.as<float>();
}

absl::Status DeviceMlp::Initialize(uint64_t seed) {
  host_.Initialize(seed);
  for (size_t t = 0; t < tensors().size(); ++t) {
    absl::Status set = SetParams(t, host_.params(t));
    if (!set.ok()) return set;
  }
  return absl::OkStatus();
}

absl::Status DeviceMlp::SetParams(size_t tensor, absl::Span<const float> values) {
  if (tensor >= tensors().size() || values.size() != tensors()[tensor].elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(values.size(), " values for tensor ", tensor, ": no such tensor or size"));
  }
  return CopyToDevice(params_[tensor].as<void>(), values.data(), sizeof(float) * values.size(),
                      stream_.get());
}

absl::StatusOr<std::vector<float>> DeviceMlp::Params(size_t tensor) const {
  if (tensor >= tensors().size()) return absl::InvalidArgumentError("no such tensor");
  return DownloadFloats(params_[tensor], tensors()[tensor].elements, stream_.get());
}

absl::StatusOr<std::vector<float>> DeviceMlp::Gradient(size_t tensor) const {
  if (tensor >= tensors().size()) return absl::InvalidArgumentError("no such tensor");
  return DownloadFloats(grads_[tensor], tensors()[tensor].elements, stream_.get());
}

absl::StatusOr<const float*> DeviceMlp::Forward(absl::Span<const float> x,
                                                absl::Span<const uint8_t> labels) {
  const std::vector<int>& widths = host_.widths();
  const int batch = static_cast<int>(labels.size());
  absl::StatusOr<float*> input = Ensure(&activations_[0], sizeof(float) * x.size());
  absl::StatusOr<float*> device_labels = Ensure(&labels_, labels.size());
  if (!input.ok()) return input.status();
  if (!device_labels.ok()) return device_labels.status();
  absl::Status copied = CopyToDevice(*input, x.data(), sizeof(float) * x.size(), stream_.get());
  if (copied.ok()) {
    copied = CopyToDevice(*device_labels, labels.data(), labels.size(), stream_.get());
  }
  if (!copied.ok()) return copied;
  const size_t layers = widths.size() - 1;
  for (size_t l = 0; l < layers; ++l) {
    const int in = widths[l], out = widths[l + 1];
    absl::StatusOr<float*> a = Ensure(&activations_[l + 1], sizeof(float) * batch * out);
    if (!a.ok()) return a.status();
    LEEWAY_CUDA_OR_RETURN(
        cuda::FillRows(*a, params_[2 * l + 1].as<float>(), batch, out, stream_.get()), "bias");
    // a (batch x out) += x (batch x in) * W^T (in x out)
    absl::Status product = BlasStatus(
        cuda::Gemm(blas_, false, true, batch, out, in, activations_[l].buffer.as<float>(), in,
                   params_[2 * l].as<float>(), in, 1.0f, *a, out),
        "forward product");
    if (!product.ok()) return product;
    if (l + 1 < layers) {
      LEEWAY_CUDA_OR_RETURN(cuda::Relu(*a, size_t(batch) * out, stream_.get()), "ReLU");
    }
  }
  return activations_.back().buffer.as<float>();
}

absl::Status DeviceMlp::Evaluate(int batch, bool delta, double* loss_sum, int* correct) {
  const int classes = host_.widths().back();
  float* d = nullptr;
  if (delta) {
    absl::StatusOr<float*> grown = Ensure(&delta_, sizeof(float) * batch * classes);
    if (!grown.ok()) return grown.status();
    d = *grown;
  }
  LEEWAY_CUDA_OR_RETURN(cuda::SoftmaxCrossEntropy(activations_.back().buffer.as<float>(),
                                                  labels_.buffer.as<uint8_t>(), batch, classes, d,
                                                  loss_sum, correct, stream_.get()),
                        "softmax cross-entropy");
  return absl::OkStatus();
}

absl::Status DeviceMlp::Backward(int batch, const GradientReady& ready) {
  const std::vector<int>& widths = host_.widths();
  for (size_t l = widths.size() - 1; l-- > 0;) {
    const int in = widths[l], out = widths[l + 1];
    float* gw = grads_[2 * l].as<float>();
    float* gb = grads_[2 * l + 1].as<float>();
    const float* delta = delta_.buffer.as<float>();
    // dW (out x in) = delta^T (out x batch) * a_in (batch x in)
    absl::Status product =
        BlasStatus(cuda::Gemm(blas_, true, false, out, in, batch, delta, out,
                              activations_[l].buffer.as<float>(), in, 0.0f, gw, in),
                   "weight gradient");
    if (!product.ok()) return product;
    LEEWAY_CUDA_OR_RETURN(cuda::ColumnSums(delta, batch, out, gb, stream_.get()), "bias gradient");
    if (l > 0) {
      // delta_in (batch x in) = delta (batch x out) * W (out x in), ReLU'.
      absl::StatusOr<float*> next = Ensure(&next_delta_, sizeof(float) * batch * in);
      if (!next.ok()) return next.status();
      product = BlasStatus(cuda::Gemm(blas_, false, false, batch, in, out, delta, out,
                                      params_[2 * l].as<float>(), in, 0.0f, *next, in),
                           "input gradient");
      if (!product.ok()) return product;
      LEEWAY_CUDA_OR_RETURN(cuda::ReluMask(*next, activations_[l].buffer.as<float>(),
                                           size_t(batch) * in, stream_.get()),
                            "ReLU mask");
    }
    // Handed over after the last read of W, in the stream's order.
    if (ready) {
      ready(2 * l + 1, gb);
      ready(2 * l, gw);
    }
    std::swap(delta_, next_delta_);
  }
  return absl::OkStatus();
}

absl::StatusOr<double> DeviceMlp::Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                                        const GradientReady& ready) {
  absl::Status valid = host_.CheckBatch(x, labels);
  if (!valid.ok()) return valid;
  if (labels.empty()) return absl::InvalidArgumentError("an empty batch");
  const int batch = static_cast<int>(labels.size());
  absl::StatusOr<const float*> logits = Forward(x, labels);
  if (!logits.ok()) return logits.status();
  const absl::Time backward_start = absl::Now();
  double loss_sum = 0;
  int correct = 0;
  absl::Status done = Evaluate(batch, true, &loss_sum, &correct);
  if (done.ok()) done = Backward(batch, ready);
  if (done.ok()) done = CudaStatus(cuda::Synchronize(stream_.get()), "backward");
  if (!done.ok()) return done;
  last_backward_ms_ = absl::ToDoubleMilliseconds(absl::Now() - backward_start);
  return loss_sum / batch;
}

absl::Status DeviceMlp::Score(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                              double* loss_sum, int* correct) {
  absl::Status valid = host_.CheckBatch(x, labels);
  if (!valid.ok()) return valid;
  const size_t input = static_cast<size_t>(host_.widths().front());
  *loss_sum = 0;
  *correct = 0;
  for (size_t start = 0; start < labels.size(); start += kEvalBatch) {
    const size_t n = std::min(kEvalBatch, labels.size() - start);
    absl::StatusOr<const float*> logits =
        Forward(x.subspan(start * input, n * input), labels.subspan(start, n));
    if (!logits.ok()) return logits.status();
    double batch_loss = 0;
    int batch_correct = 0;
    absl::Status scored = Evaluate(static_cast<int>(n), false, &batch_loss, &batch_correct);
    if (!scored.ok()) return scored;
    *loss_sum += batch_loss;
    *correct += batch_correct;
  }
  return absl::OkStatus();
}

absl::StatusOr<double> DeviceMlp::Accuracy(absl::Span<const float> x,
                                           absl::Span<const uint8_t> labels) {
  double loss_sum = 0;
  int correct = 0;
  absl::Status scored = Score(x, labels, &loss_sum, &correct);
  if (!scored.ok()) return scored;
  return labels.empty() ? 0.0 : double(correct) / double(labels.size());
}

absl::StatusOr<double> DeviceMlp::Loss(absl::Span<const float> x,
                                       absl::Span<const uint8_t> labels) {
  double loss_sum = 0;
  int correct = 0;
  absl::Status scored = Score(x, labels, &loss_sum, &correct);
  if (!scored.ok()) return scored;
  return labels.empty() ? 0.0 : loss_sum / double(labels.size());
}

#else  // !LEEWAY_HAVE_CUDA

namespace {
absl::Status NoCuda() {
  return absl::FailedPreconditionError("built without CUDA: train on the CPU (Mlp)");
}
}  // namespace

absl::StatusOr<std::unique_ptr<DeviceMlp>> DeviceMlp::Create(std::vector<int>) { return NoCuda(); }
DeviceMlp::~DeviceMlp() = default;
absl::Status DeviceMlp::Initialize(uint64_t) { return NoCuda(); }
absl::StatusOr<std::vector<float>> DeviceMlp::Params(size_t) const { return NoCuda(); }
absl::StatusOr<std::vector<float>> DeviceMlp::Gradient(size_t) const { return NoCuda(); }
absl::Status DeviceMlp::SetParams(size_t, absl::Span<const float>) { return NoCuda(); }
absl::StatusOr<double> DeviceMlp::Train(absl::Span<const float>, absl::Span<const uint8_t>,
                                        const GradientReady&) {
  return NoCuda();
}
absl::StatusOr<double> DeviceMlp::Accuracy(absl::Span<const float>, absl::Span<const uint8_t>) {
  return NoCuda();
}
absl::StatusOr<double> DeviceMlp::Loss(absl::Span<const float>, absl::Span<const uint8_t>) {
  return NoCuda();
}

#endif  // LEEWAY_HAVE_CUDA

}  // namespace leeway
