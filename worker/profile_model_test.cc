#include "worker/profile_model.h"

#include <cmath>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

uint64_t Parameters(const std::vector<ProfileTensor>& tensors) {
  uint64_t n = 0;
  for (const ProfileTensor& t : tensors) n += t.elements();
  return n;
}

TEST_CASE("the profile models have their published parameter counts") {
  // GPT-2 small as released; BERT-base uncased with its pooler;
  // torchvision's resnet50.
  auto gpt2 = ProfileModel("gpt2-small");
  auto bert = ProfileModel("bert-base");
  auto resnet = ProfileModel("resnet50");
  REQUIRE(gpt2.ok());
  REQUIRE(bert.ok());
  REQUIRE(resnet.ok());
  CHECK(Parameters(*gpt2) == 124439808);
  CHECK(Parameters(*bert) == 109482240);
  CHECK(Parameters(*resnet) == 25557032);
  // GPT-3 XL (the GPT-3 paper's 1.3B row): embeddings 50257 x 2048 and
  // 2048 x 2048, 24 blocks of 50,358,272, the final norm.
  auto gpt3 = ProfileModel("gpt3-xl");
  REQUIRE(gpt3.ok());
  CHECK(Parameters(*gpt3) == 1315723264);
  CHECK(gpt2->size() == 2 + 12 * 12 + 2);
  CHECK(resnet->size() == 161);
  CHECK(gpt2->front().name == "wte");
  CHECK(resnet->back().name == "fc.bias");
  CHECK_FALSE(ProfileModel("gpt5").ok());
}

TEST_CASE("resnet50-fused-norms holds resnet50's elements and compute in 55 tensors") {
  auto resnet = ProfileModel("resnet50");
  auto fused = ProfileModel("resnet50-fused-norms");
  REQUIRE(resnet.ok());
  REQUIRE(fused.ok());
  CHECK(Parameters(*fused) == Parameters(*resnet));
  CHECK(fused->size() == 55);  // 53 convolutions and the classifier's two
  double cost = 0, fused_cost = 0;
  for (const ProfileTensor& t : *resnet) cost += t.cost;
  for (const ProfileTensor& t : *fused) fused_cost += t.cost;
  CHECK(fused_cost == Approx(cost));
  CHECK(fused->front().name == "conv1.weight+bn1");
  CHECK(fused->front().elements() == 64 * (3 * 7 * 7 + 2));
}

TEST_CASE("compute shares follow FLOPs, not parameter counts") {
  auto gpt2 = ProfileModel("gpt2-small");
  REQUIRE(gpt2.ok());
  double total = 0, embeddings = 0;
  for (const ProfileTensor& t : *gpt2) {
    CHECK(t.cost > 0);
    total += t.cost;
    if (t.name == "wte" || t.name == "wpe") embeddings += t.cost;
  }
  // A third of the parameters, almost none of the compute.
  CHECK(embeddings / total < 0.001);
  auto resnet = ProfileModel("resnet50");
  REQUIRE(resnet.ok());
  double conv1 = 0, fc = 0;
  for (const ProfileTensor& t : *resnet) {
    if (t.name == "conv1.weight") conv1 = t.cost;
    if (t.name == "fc.weight") fc = t.cost;
  }
  // 9408 weights at 112 x 112 outweigh 2M weights applied once.
  CHECK(conv1 > 50 * fc);
}

TEST_CASE("pooled gradients are seeded, vary by key and are heavy-tailed") {
  GradientPool a(1 << 16, 7), b(1 << 16, 7);
  auto x = a.Draw(1 << 16, 1);
  auto y = b.Draw(1 << 16, 1);
  REQUIRE(x.size() == (1u << 16));
  CHECK(std::equal(x.begin(), x.end(), y.begin()));
  auto z = a.Draw(1 << 16, 2);
  CHECK(x.data() != z.data());
  double sum2 = 0, sum4 = 0, sum = 0;
  for (float v : x) {
    CHECK(std::isfinite(v));
    sum += v;
    sum2 += double(v) * v;
    sum4 += double(v) * v * v * v;
  }
  const double n = x.size();
  const double rms = std::sqrt(sum2 / n);
  CHECK(rms > 3e-4);
  CHECK(rms < 3e-3);
  CHECK(std::abs(sum / n) < 0.1 * rms);          // symmetric
  CHECK(sum4 / n / ((sum2 / n) * (sum2 / n)) > 6);  // kurtosis well above a normal's 3
  // A request larger than the pool is cut to the pool.
  CHECK(a.Draw(uint64_t{1} << 30, 3).size() <= (1u << 16) + (1u << 20));
}

}  // namespace
}  // namespace leeway
