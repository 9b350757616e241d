#include "worker/mlp.h"

#include <cmath>
#include <random>

#include "catch2/catch.hpp"
#include "worker/mlp_test_util.h"

namespace leeway {
namespace {

using testing::Batch;
using testing::Blobs;

TEST_CASE("backward matches finite differences of the loss") {
  auto mlp = Mlp::Create({5, 7, 4});
  REQUIRE(mlp.ok());
  mlp->Initialize(3);
  Batch b = Blobs(6, 5, 4, 11);
  std::vector<std::vector<float>> grads(mlp->tensors().size());
  REQUIRE(mlp->Train(b.x, b.labels, [&](size_t t, absl::Span<const float> g) {
                 grads[t].assign(g.begin(), g.end());
               }).ok());
  constexpr float kStep = 1e-2f;
  for (size_t t = 0; t < grads.size(); ++t) {
    REQUIRE(grads[t].size() == mlp->tensors()[t].elements);
    for (size_t i = 0; i < grads[t].size(); i += 3) {
      float& w = mlp->params(t)[i];
      const float saved = w;
      w = saved + kStep;
      const double up = *mlp->Loss(b.x, b.labels);
      w = saved - kStep;
      const double down = *mlp->Loss(b.x, b.labels);
      w = saved;
      const double numeric = (up - down) / (2 * kStep);
      INFO("tensor " << t << " element " << i);
      CHECK(grads[t][i] == Approx(numeric).margin(2e-3).epsilon(0.05));
    }
  }
}

TEST_CASE("gradients arrive last layer first, each once") {
  auto mlp = Mlp::Create({4, 8, 8, 3});
  REQUIRE(mlp.ok());
  mlp->Initialize(1);
  Batch b = Blobs(4, 4, 3, 2);
  std::vector<size_t> order;
  REQUIRE(mlp->Train(b.x, b.labels, [&](size_t t, absl::Span<const float>) {
                 order.push_back(t);
               }).ok());
  CHECK(order == std::vector<size_t>{5, 4, 3, 2, 1, 0});
}

TEST_CASE("plain SGD on the gradients learns a separable problem") {
  auto mlp = Mlp::Create({6, 16, 3});
  REQUIRE(mlp.ok());
  mlp->Initialize(7);
  Batch train = Blobs(300, 6, 3, 5), test = Blobs(150, 6, 3, 6);
  const double before = *mlp->Loss(test.x, test.labels);
  for (int epoch = 0; epoch < 30; ++epoch) {
    for (int start = 0; start < 300; start += 30) {
      auto x = absl::MakeConstSpan(train.x).subspan(start * 6, 30 * 6);
      auto y = absl::MakeConstSpan(train.labels).subspan(start, 30);
      REQUIRE(mlp->Train(x, y, [&](size_t t, absl::Span<const float> g) {
                     for (size_t i = 0; i < g.size(); ++i) mlp->params(t)[i] -= 0.5f * g[i];
                   }).ok());
    }
  }
  CHECK(*mlp->Loss(test.x, test.labels) < before / 4);
  CHECK(*mlp->Accuracy(test.x, test.labels) > 0.95);
}

TEST_CASE("inputs that do not fit the model are refused") {
  auto mlp = Mlp::Create({4, 3});
  REQUIRE(mlp.ok());
  std::vector<float> x(8, 0.0f);
  std::vector<uint8_t> labels = {0, 1, 2};
  CHECK(mlp->Train(x, labels, nullptr).status().code() == absl::StatusCode::kInvalidArgument);
  labels = {0, 3};
  CHECK_FALSE(mlp->Accuracy(x, labels).ok());
  CHECK_FALSE(mlp->Train({}, {}, nullptr).ok());
  CHECK_FALSE(Mlp::Create({4}).ok());
  CHECK_FALSE(Mlp::Create({4, 0, 2}).ok());
}

}  // namespace
}  // namespace leeway
