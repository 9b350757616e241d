#include "worker/profile_model.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/counter_random.h"

namespace leeway {
namespace {

using Tensors = std::vector<ProfileTensor>;

void Add(Tensors* t, std::string name, std::vector<int64_t> shape, double cost_per_element = 1) {
  ProfileTensor p{std::move(name), std::move(shape), 0};
  p.cost = static_cast<double>(p.elements()) * cost_per_element;
  t->push_back(std::move(p));
}

// An embedding table: its gradient is a scatter of one row per token.
void AddEmbedding(Tensors* t, std::string name, int64_t rows, int64_t width) {
  Add(t, std::move(name), {rows, width}, 0);
  t->back().cost = static_cast<double>(width);
}

void AddLinear(Tensors* t, const std::string& name, int64_t in, int64_t out) {
  Add(t, name + ".weight", {in, out});
  Add(t, name + ".bias", {out});
}

void AddNorm(Tensors* t, const std::string& name, int64_t width) {
  Add(t, name + ".weight", {width});
  Add(t, name + ".bias", {width});
}

// GPT-2's Conv1D stores weights as [in, out]; the shapes are the released
// checkpoint's. GPT-3 has the same layer list at other sizes.
Tensors Gpt(int64_t kWidth, int64_t kLayers, int64_t kContext) {
  constexpr int64_t kVocab = 50257;
  Tensors t;
  AddEmbedding(&t, "wte", kVocab, kWidth);
  AddEmbedding(&t, "wpe", kContext, kWidth);
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string h = absl::StrCat("h.", l);
    AddNorm(&t, h + ".ln_1", kWidth);
    AddLinear(&t, h + ".attn.c_attn", kWidth, 3 * kWidth);
    AddLinear(&t, h + ".attn.c_proj", kWidth, kWidth);
    AddNorm(&t, h + ".ln_2", kWidth);
    AddLinear(&t, h + ".mlp.c_fc", kWidth, 4 * kWidth);
    AddLinear(&t, h + ".mlp.c_proj", 4 * kWidth, kWidth);
  }
  AddNorm(&t, "ln_f", kWidth);
  return t;
}

Tensors BertBase() {
  constexpr int64_t kWidth = 768, kLayers = 12, kVocab = 30522, kPositions = 512;
  Tensors t;
  AddEmbedding(&t, "embeddings.word_embeddings", kVocab, kWidth);
  AddEmbedding(&t, "embeddings.position_embeddings", kPositions, kWidth);
  AddEmbedding(&t, "embeddings.token_type_embeddings", 2, kWidth);
  AddNorm(&t, "embeddings.LayerNorm", kWidth);
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string e = absl::StrCat("encoder.layer.", l);
    for (const char* proj : {"query", "key", "value"}) {
      AddLinear(&t, absl::StrCat(e, ".attention.self.", proj), kWidth, kWidth);
    }
    AddLinear(&t, e + ".attention.output.dense", kWidth, kWidth);
    AddNorm(&t, e + ".attention.output.LayerNorm", kWidth);
    AddLinear(&t, e + ".intermediate.dense", kWidth, 4 * kWidth);
    AddLinear(&t, e + ".output.dense", 4 * kWidth, kWidth);
    AddNorm(&t, e + ".output.LayerNorm", kWidth);
  }
  AddLinear(&t, "pooler.dense", kWidth, kWidth);
  return t;
}

// torchvision's resnet50 (v1.5: stride on the 3x3), 224 x 224 input; a
// convolution's cost is weighted by its output's spatial size. With
// `norms_in_conv` a batch norm's scale and shift are two more columns of
// its convolution's tensor.
struct ConvBnAdder {
  Tensors* t;
  bool norms_in_conv;
  void operator()(const std::string& name, const std::string& bn, int64_t out, int64_t in,
                  int64_t k, int64_t spatial) const {
    const double weight = static_cast<double>(spatial * spatial);
    if (norms_in_conv) {
      Add(t, name + ".weight+" + bn, {out, in * k * k + 2}, weight);
      return;
    }
    Add(t, name + ".weight", {out, in, k, k}, weight);
    Add(t, bn + ".weight", {out}, weight);
    Add(t, bn + ".bias", {out}, weight);
  }
};

Tensors ResNet50(bool norms_in_conv) {
  Tensors t;
  const ConvBnAdder add_conv_bn{&t, norms_in_conv};
  add_conv_bn("conv1", "bn1", 64, 3, 7, 112);
  const int64_t blocks[] = {3, 4, 6, 3};
  const int64_t widths[] = {64, 128, 256, 512};
  const int64_t spatial[] = {56, 28, 14, 7};
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t w = widths[stage], out = 4 * w, s = spatial[stage];
    for (int64_t b = 0; b < blocks[stage]; ++b) {
      const std::string p = absl::StrCat("layer", stage + 1, ".", b);
      add_conv_bn(p + ".conv1", p + ".bn1", w, in, 1, b == 0 && stage > 0 ? 2 * s : s);
      add_conv_bn(p + ".conv2", p + ".bn2", w, w, 3, s);
      add_conv_bn(p + ".conv3", p + ".bn3", out, w, 1, s);
      if (b == 0) add_conv_bn(p + ".downsample.0", p + ".downsample.1", out, in, 1, s);
      in = out;
    }
  }
  Add(&t, "fc.weight", {1000, 2048});
  Add(&t, "fc.bias", {1000});
  return t;
}

}  // namespace

uint64_t ProfileTensor::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

std::vector<std::string> ProfileModelNames() {
  return {"gpt2-small", "bert-base", "resnet50", "resnet50-fused-norms", "gpt3-xl"};
}

absl::StatusOr<std::vector<ProfileTensor>> ProfileModel(const std::string& name) {
  if (name == "gpt2-small") return Gpt(768, 12, 1024);
  if (name == "gpt3-xl") return Gpt(2048, 24, 2048);
  if (name == "bert-base") return BertBase();
  if (name == "resnet50") return ResNet50(/*norms_in_conv=*/false);
  if (name == "resnet50-fused-norms") return ResNet50(/*norms_in_conv=*/true);
  return absl::InvalidArgumentError(absl::StrCat("unknown profile '", name, "' (",
                                                 absl::StrJoin(ProfileModelNames(), ", "), ")"));
}

GradientPool::GradientPool(uint64_t max_elements, uint64_t seed) {
  constexpr float kScale = 1e-3f;  // Lomax(alpha = 3, scale): RMS = scale
  values_.resize(max_elements + (uint64_t{1} << 20));
  for (uint64_t i = 0; i < values_.size(); ++i) {
    const float u = CounterUniform(seed, i);
    const float magnitude = kScale * (1.0f / std::cbrt(1.0f - 0.999999f * u) - 1.0f);
    values_[i] = (CounterUniform(~seed, i) < 0.5f) ? -magnitude : magnitude;
  }
}

absl::Span<const float> GradientPool::Draw(uint64_t elements, uint64_t key) const {
  const uint64_t room = values_.size() > elements ? values_.size() - elements : 0;
  const float u = CounterUniform(key, 0);
  const uint64_t offset = std::min<uint64_t>(room, static_cast<uint64_t>(u * (room + 1)));
  return absl::MakeConstSpan(values_).subspan(offset, std::min<uint64_t>(elements, values_.size()));
}

}  // namespace leeway
