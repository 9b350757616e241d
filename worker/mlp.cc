#include "worker/mlp.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace leeway {

absl::StatusOr<Mlp> Mlp::Create(std::vector<int> widths) {
  if (widths.size() < 2) return absl::InvalidArgumentError("an MLP needs at least two widths");
  for (int w : widths) {
    if (w <= 0 || w > (1 << 20)) {
      return absl::InvalidArgumentError(absl::StrCat("layer width ", w, " out of range"));
    }
  }
  return Mlp(std::move(widths));
}

Mlp::Mlp(std::vector<int> widths) : widths_(std::move(widths)) {
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    const int64_t in = widths_[l], out = widths_[l + 1];
    tensors_.push_back({absl::StrCat("dense", l, ".weight"), {out, in}, size_t(out * in)});
    tensors_.push_back({absl::StrCat("dense", l, ".bias"), {out}, size_t(out)});
  }
  for (const TensorInfo& t : tensors_) {
    params_.emplace_back(t.elements, 0.0f);
    grads_.emplace_back(t.elements, 0.0f);
  }
  activations_.resize(widths_.size());
}

absl::Status Mlp::CheckBatch(absl::Span<const float> x,
                            absl::Span<const uint8_t> labels) const {
  if (x.size() != labels.size() * size_t(widths_.front())) {
    return absl::InvalidArgumentError(absl::StrCat(x.size(), " inputs for ", labels.size(),
                                                   " samples of ", widths_.front()));
  }
  for (uint8_t label : labels) {
    if (label >= widths_.back()) {
      return absl::InvalidArgumentError(absl::StrCat("label ", int(label), " is not below ",
                                                     widths_.back(), " classes"));
    }
  }
  return absl::OkStatus();
}

void Mlp::Initialize(uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t l = 0; l + 1 < widths_.size(); ++l) {
    const float bound = std::sqrt(6.0f / widths_[l]);
    std::uniform_real_distribution<float> u(-bound, bound);
    for (float& w : params_[2 * l]) w = u(rng);
    std::fill(params_[2 * l + 1].begin(), params_[2 * l + 1].end(), 0.0f);
  }
}

const std::vector<float>& Mlp::Forward(absl::Span<const float> x, int batch) {
  activations_[0].assign(x.begin(), x.end());
  const size_t layers = widths_.size() - 1;
  for (size_t l = 0; l < layers; ++l) {
    const int in = widths_[l], out = widths_[l + 1];
    std::vector<float>& a = activations_[l + 1];
    a.resize(size_t(batch) * out);
    const std::vector<float>& bias = params_[2 * l + 1];
    for (int b = 0; b < batch; ++b) std::copy(bias.begin(), bias.end(), a.begin() + size_t(b) * out);
    // a (batch x out) += x (batch x in) * W^T (in x out)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in, 1.0f,
                activations_[l].data(), in, params_[2 * l].data(), in, 1.0f, a.data(), out);
    if (l + 1 < layers) {
      for (float& v : a) v = std::max(v, 0.0f);
    }
  }
  return activations_.back();
}

double Mlp::SoftmaxLoss(absl::Span<const uint8_t> labels, int batch, std::vector<float>* d) {
  const int classes = widths_.back();
  const std::vector<float>& logits = activations_.back();
  if (d != nullptr) d->resize(size_t(batch) * classes);
  double loss = 0;
  for (int b = 0; b < batch; ++b) {
    const float* z = logits.data() + size_t(b) * classes;
    const float top = *std::max_element(z, z + classes);
    double sum = 0;
    for (int k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - top);
    const int label = labels[b];
    loss += std::log(sum) - (double(z[label]) - top);
    if (d == nullptr) continue;
    for (int k = 0; k < classes; ++k) {
      const double p = std::exp(double(z[k]) - top) / sum;
      (*d)[size_t(b) * classes + k] = static_cast<float>((p - (k == label)) / batch);
    }
  }
  return loss / batch;
}

absl::StatusOr<double> Mlp::Train(absl::Span<const float> x, absl::Span<const uint8_t> labels,
                                  const GradientReady& ready) {
  absl::Status valid = CheckBatch(x, labels);
  if (!valid.ok()) return valid;
  if (labels.empty()) return absl::InvalidArgumentError("an empty batch");
  const int batch = static_cast<int>(labels.size());
  Forward(x, batch);
  const absl::Time backward_start = absl::Now();
  const double loss = SoftmaxLoss(labels, batch, &delta_);
  for (size_t l = widths_.size() - 1; l-- > 0;) {
    const int in = widths_[l], out = widths_[l + 1];
    std::vector<float>& gw = grads_[2 * l];
    std::vector<float>& gb = grads_[2 * l + 1];
    // dW (out x in) = delta^T (out x batch) * a_in (batch x in)
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, batch, 1.0f, delta_.data(),
                out, activations_[l].data(), in, 0.0f, gw.data(), in);
    std::fill(gb.begin(), gb.end(), 0.0f);
    for (int b = 0; b < batch; ++b) {
      for (int k = 0; k < out; ++k) gb[k] += delta_[size_t(b) * out + k];
    }
    if (l > 0) {
      // delta_in (batch x in) = delta (batch x out) * W (out x in), ReLU'.
      next_delta_.resize(size_t(batch) * in);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in, out, 1.0f,
                  delta_.data(), out, params_[2 * l].data(), in, 0.0f, next_delta_.data(), in);
      const std::vector<float>& a = activations_[l];
      for (size_t i = 0; i < next_delta_.size(); ++i) {
        if (a[i] <= 0.0f) next_delta_[i] = 0.0f;
      }
    }
    // Hand the gradients over only after the last read of W.
    if (ready) {
      ready(2 * l + 1, gb);
      ready(2 * l, gw);
    }
    delta_.swap(next_delta_);
  }
  last_backward_ms_ = absl::ToDoubleMilliseconds(absl::Now() - backward_start);
  return loss;
}

absl::StatusOr<double> Mlp::Accuracy(absl::Span<const float> x,
                                     absl::Span<const uint8_t> labels) {
  absl::Status valid = CheckBatch(x, labels);
  if (!valid.ok()) return valid;
  const int classes = widths_.back();
  const size_t input = static_cast<size_t>(widths_.front());
  constexpr size_t kBatch = 256;
  size_t correct = 0;
  for (size_t start = 0; start < labels.size(); start += kBatch) {
    const size_t n = std::min(kBatch, labels.size() - start);
    const std::vector<float>& z = Forward(x.subspan(start * input, n * input), static_cast<int>(n));
    for (size_t b = 0; b < n; ++b) {
      const float* row = z.data() + b * classes;
      correct += size_t(std::max_element(row, row + classes) - row) == labels[start + b];
    }
  }
  return labels.empty() ? 0.0 : double(correct) / double(labels.size());
}

absl::StatusOr<double> Mlp::Loss(absl::Span<const float> x, absl::Span<const uint8_t> labels) {
  absl::Status valid = CheckBatch(x, labels);
  if (!valid.ok()) return valid;
  const size_t input = static_cast<size_t>(widths_.front());
  constexpr size_t kBatch = 256;
  double total = 0;
  for (size_t start = 0; start < labels.size(); start += kBatch) {
    const size_t n = std::min(kBatch, labels.size() - start);
    Forward(x.subspan(start * input, n * input), static_cast<int>(n));
    total += SoftmaxLoss(labels.subspan(start, n), static_cast<int>(n), nullptr) * n;
  }
  return labels.empty() ? 0.0 : total / labels.size();
}

}  // namespace leeway
