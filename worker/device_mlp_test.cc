// DeviceMlp against the CPU model on the same batches: loss, every
// gradient, accuracy and test loss, over a few SGD steps applied to both;
// bad batches refused. Tagged "gpu"; without a GPU (or a CUDA build) it
// checks that Create refuses and says so.
#include "worker/device_mlp.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "catch2/catch.hpp"
#include "kernels/gpu.h"
#include "worker/mlp.h"
#include "worker/mlp_test_util.h"

namespace leeway {
namespace {

using testing::Batch;
using testing::Blobs;

TEST_CASE("without a GPU the device MLP refuses, and says why") {
  if (UsableGpus() > 0) return;
  WARN("device MLP tests skipped: no usable GPU or no CUDA build");
  CHECK(DeviceMlp::Create({4, 8, 3}).status().code() == absl::StatusCode::kFailedPrecondition);
}

// Every element of `gpu` within `tolerance` of `cpu`, relative to cpu's
// largest magnitude (sums run in another order on the GPU).
void RequireClose(const std::vector<float>& gpu, absl::Span<const float> cpu, double tolerance) {
  REQUIRE(gpu.size() == cpu.size());
  double scale = 1e-30;
  for (float v : cpu) scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO("element " << i << ": " << gpu[i] << " vs " << cpu[i]);
    REQUIRE(std::fabs(gpu[i] - cpu[i]) <= tolerance * scale);
  }
}

TEST_CASE("the device MLP computes the CPU model's loss, gradients and accuracy") {
  if (UsableGpus() == 0) return;
  const std::vector<int> widths = {20, 64, 32, 5};
  auto cpu = Mlp::Create(widths);
  auto gpu = DeviceMlp::Create(widths);
  REQUIRE(cpu.ok());
  REQUIRE(gpu.ok());
  cpu->Initialize(7);
  REQUIRE((*gpu)->Initialize(7).ok());
  for (size_t t = 0; t < cpu->tensors().size(); ++t) {
    REQUIRE((*gpu)->initial(t).size() == cpu->params(t).size());
    REQUIRE(std::equal(cpu->params(t).begin(), cpu->params(t).end(), (*gpu)->initial(t).begin()));
  }
  const Batch test = Blobs(600, 20, 5, 99);  // more than one evaluation batch
  for (int step = 0; step < 4; ++step) {
    INFO("step " << step);
    const Batch b = Blobs(32, 20, 5, 10 + step);
    std::vector<std::vector<float>> cpu_grads(cpu->tensors().size());
    std::vector<size_t> order;
    auto cpu_loss = cpu->Train(b.x, b.labels, [&](size_t t, absl::Span<const float> g) {
      cpu_grads[t].assign(g.begin(), g.end());
    });
    auto gpu_loss = (*gpu)->Train(b.x, b.labels, [&](size_t t, const float* g) {
      CHECK(g != nullptr);
      order.push_back(t);
    });
    REQUIRE(cpu_loss.ok());
    REQUIRE(gpu_loss.ok());
    CHECK(*gpu_loss == Approx(*cpu_loss).epsilon(1e-5));
    CHECK(order == std::vector<size_t>{5, 4, 3, 2, 1, 0});
    for (size_t t = 0; t < cpu_grads.size(); ++t) {
      INFO("tensor " << t);
      auto g = (*gpu)->Gradient(t);
      REQUIRE(g.ok());
      RequireClose(*g, cpu_grads[t], 1e-4);
      // One SGD step on both, from the CPU's gradient: the models stay equal.
      absl::Span<float> w = cpu->params(t);
      for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.1f * cpu_grads[t][i];
      REQUIRE((*gpu)->SetParams(t, w).ok());
    }
    auto cpu_accuracy = cpu->Accuracy(test.x, test.labels);
    auto gpu_accuracy = (*gpu)->Accuracy(test.x, test.labels);
    REQUIRE(gpu_accuracy.ok());
    CHECK(*gpu_accuracy == Approx(*cpu_accuracy).margin(2.0 / 600));  // ties may differ
    auto gpu_test_loss = (*gpu)->Loss(test.x, test.labels);
    REQUIRE(gpu_test_loss.ok());
    CHECK(*gpu_test_loss == Approx(*cpu->Loss(test.x, test.labels)).epsilon(1e-5));
  }
}

TEST_CASE("the device MLP refuses batches that do not fit it") {
  if (UsableGpus() == 0) return;
  auto gpu = DeviceMlp::Create({4, 8, 3});
  REQUIRE(gpu.ok());
  REQUIRE((*gpu)->Initialize(1).ok());
  std::vector<float> x(8, 0.5f);
  std::vector<uint8_t> labels = {0, 3};  // 3 is not a class
  CHECK((*gpu)->Train(x, labels, nullptr).status().code() == absl::StatusCode::kInvalidArgument);
  labels = {0};  // one label for two inputs
  CHECK((*gpu)->Train(x, labels, nullptr).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK((*gpu)->SetParams(0, std::vector<float>(5)).code() == absl::StatusCode::kInvalidArgument);
  CHECK_FALSE((*gpu)->Params(99).ok());
}

}  // namespace
}  // namespace leeway
