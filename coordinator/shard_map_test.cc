#include "coordinator/shard_map.h"

#include <string>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

constexpr uint64_t kChunkBytes = 4 << 20;  // DESIGN.md's default

void Add(std::vector<LayerShape>* layers, const std::string& name, uint64_t elements) {
  layers->push_back({static_cast<uint32_t>(layers->size()), name, elements, 4});
}

// GPT-2 small (124M): the real tensor shapes.
std::vector<LayerShape> Gpt2Small() {
  std::vector<LayerShape> l;
  Add(&l, "wte", 50257ull * 768);
  Add(&l, "wpe", 1024ull * 768);
  for (int b = 0; b < 12; ++b) {
    const std::string h = "h." + std::to_string(b) + ".";
    Add(&l, h + "ln_1.weight", 768);
    Add(&l, h + "ln_1.bias", 768);
    Add(&l, h + "attn.c_attn.weight", 768ull * 2304);
    Add(&l, h + "attn.c_attn.bias", 2304);
    Add(&l, h + "attn.c_proj.weight", 768ull * 768);
    Add(&l, h + "attn.c_proj.bias", 768);
    Add(&l, h + "ln_2.weight", 768);
    Add(&l, h + "ln_2.bias", 768);
    Add(&l, h + "mlp.c_fc.weight", 768ull * 3072);
    Add(&l, h + "mlp.c_fc.bias", 3072);
    Add(&l, h + "mlp.c_proj.weight", 3072ull * 768);
    Add(&l, h + "mlp.c_proj.bias", 768);
  }
  Add(&l, "ln_f.weight", 768);
  Add(&l, "ln_f.bias", 768);
  return l;
}

// ResNet-50: the real tensor shapes (convolutions, batch norms, fc).
std::vector<LayerShape> ResNet50() {
  std::vector<LayerShape> l;
  auto bn = [&](const std::string& name, uint64_t c) {
    Add(&l, name + ".weight", c);
    Add(&l, name + ".bias", c);
  };
  Add(&l, "conv1.weight", 64ull * 3 * 7 * 7);
  bn("bn1", 64);
  uint64_t in = 64;
  const int blocks[] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    const uint64_t width = 64ull << stage, out = width * 4;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(b) + ".";
      Add(&l, p + "conv1.weight", width * in);
      bn(p + "bn1", width);
      Add(&l, p + "conv2.weight", width * width * 9);
      bn(p + "bn2", width);
      Add(&l, p + "conv3.weight", out * width);
      bn(p + "bn3", out);
      if (b == 0) {
        Add(&l, p + "downsample.0.weight", out * in);
        bn(p + "downsample.1", out);
      }
      in = out;
    }
  }
  Add(&l, "fc.weight", 1000ull * 2048);
  Add(&l, "fc.bias", 1000);
  return l;
}

uint64_t Total(const std::vector<LayerShape>& layers) {
  uint64_t total = 0;
  for (const auto& l : layers) total += l.elements;
  return total;
}

TEST_CASE("the model shapes are the real ones") {
  CHECK(Total(Gpt2Small()) == 124439808);  // GPT-2 small without tied duplicates
  CHECK(Total(ResNet50()) == 25557032);    // torchvision's resnet50
}

TEST_CASE("real models balance within 10% across servers") {
  for (const auto& [name, layers] : {std::make_pair("gpt2-small", Gpt2Small()),
                                     std::make_pair("resnet50", ResNet50())}) {
    for (uint32_t servers : {1u, 2u, 3u, 4u, 8u}) {
      INFO(name << " on " << servers << " servers");
      auto map = BuildShardMap(layers, servers, kChunkBytes);
      REQUIRE(map.ok());
      const auto bytes = ServerBytes(*map, layers, servers);
      CHECK(Imbalance(bytes) <= 1.10);
    }
  }
}

TEST_CASE("chunks cover every layer exactly and respect the size cap") {
  const auto layers = ResNet50();
  auto map = BuildShardMap(layers, 4, kChunkBytes);
  REQUIRE(map.ok());
  std::vector<uint64_t> covered(layers.size(), 0);
  for (const ChunkPlacement& c : *map) {
    CHECK(c.elements * 4 <= kChunkBytes);
    CHECK(c.elements > 0);
    CHECK(c.offset == covered[c.layer]);  // chunks in order, contiguous
    covered[c.layer] += c.elements;
    CHECK(c.server < 4);
  }
  for (size_t i = 0; i < layers.size(); ++i) CHECK(covered[i] == layers[i].elements);
}

TEST_CASE("the map is deterministic and chunk sizes differ by one at most") {
  std::vector<LayerShape> layers;
  Add(&layers, "big", (10ull << 20) + 3);  // 40 MiB + 12 bytes: 11 chunks
  auto a = BuildShardMap(layers, 3, kChunkBytes);
  auto b = BuildShardMap(layers, 3, kChunkBytes);
  REQUIRE(a.ok());
  REQUIRE(a->size() == 11);
  for (size_t i = 0; i < a->size(); ++i) {
    CHECK((*a)[i].server == (*b)[i].server);
    CHECK((*a)[i].elements >= (*a)[10].elements);
    CHECK((*a)[i].elements <= (*a)[10].elements + 1);
  }
}

TEST_CASE("bad layer lists are refused") {
  std::vector<LayerShape> layers;
  Add(&layers, "a", 10);
  CHECK_FALSE(BuildShardMap(layers, 0, kChunkBytes).ok());
  CHECK_FALSE(BuildShardMap(layers, 1, 2).ok());  // chunk smaller than an element
  layers.push_back(layers[0]);
  CHECK_FALSE(BuildShardMap(layers, 1, kChunkBytes).ok());  // duplicate id
  std::vector<LayerShape> empty_layer;
  Add(&empty_layer, "e", 0);
  CHECK_FALSE(BuildShardMap(empty_layer, 1, kChunkBytes).ok());
}

}  // namespace
}  // namespace leeway
