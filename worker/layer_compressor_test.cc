#include "worker/layer_compressor.h"

#include <cmath>
#include <random>
#include <vector>

#include "catch2/catch.hpp"

namespace leeway {
namespace {

std::vector<ChunkSlice> ThreeChunks() { return {{0, 0, 400}, {1, 400, 400}, {2, 800, 200}}; }

std::vector<float> Gradient(size_t n, uint64_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> g(n);
  for (auto& x : g) x = normal(rng);
  return g;
}

// The dense layer the payloads describe, chunk by chunk.
std::vector<float> Decoded(const std::vector<std::vector<uint8_t>>& payloads,
                           const std::vector<ChunkSlice>& chunks, size_t n) {
  std::vector<float> out(n, 0.0f);
  for (size_t c = 0; c < chunks.size(); ++c) {
    REQUIRE(Decode(payloads[c], absl::MakeSpan(out).subspan(chunks[c].offset,
                                                            chunks[c].elements)).ok());
  }
  return out;
}

TEST_CASE("uncompressed layers send the gradient exactly, one payload per chunk") {
  auto layer = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
  REQUIRE(layer.ok());
  const auto g = Gradient(1000, 1);
  CodecParams none;
  auto payloads = layer->Compress(g, none);
  REQUIRE(payloads.ok());
  REQUIRE(payloads->size() == 3);
  CHECK(Decoded(*payloads, ThreeChunks(), 1000) == g);
  for (float r : layer->residual()) CHECK(r == 0.0f);
}

TEST_CASE("the residual is measured only when asked, and the payload is the same") {
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  topk.density = 0.05f;
  auto measured = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
  auto skipped = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
  REQUIRE(measured.ok());
  REQUIRE(skipped.ok());
  const auto g = Gradient(1000, 7);
  CompressionStats with, without;
  without.measure_residual = false;
  auto a = measured->Compress(g, topk, &with);
  auto b = skipped->Compress(g, topk, &without);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK(with.gradient_norm == without.gradient_norm);
  CHECK(with.residual_ratio > 0);
  CHECK(without.residual_ratio == 0);
}

TEST_CASE("momentum correction and error feedback keep what was not sent") {
  // With momentum m, the velocity u_t = m u_{t-1} + g_t; what is sent plus
  // what the residual keeps must add up to the sum of the u's actually
  // accumulated (masking restarts u where something was sent).
  const float m = 0.9f;
  auto layer = LayerCompressor::Create(1000, ThreeChunks(), m);
  REQUIRE(layer.ok());
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  topk.density = 0.05f;
  std::vector<double> sent(1000, 0.0), fed(1000, 0.0);
  std::vector<float> u(1000, 0.0f);
  for (int step = 0; step < 50; ++step) {
    const auto g = Gradient(1000, 100 + step);
    for (size_t i = 0; i < 1000; ++i) {
      u[i] = m * layer->momentum()[i] + g[i];
      fed[i] += u[i];
    }
    CompressionStats stats;
    auto payloads = layer->Compress(g, topk, &stats);
    REQUIRE(payloads.ok());
    CHECK(stats.gradient_norm > 0);
    CHECK(stats.residual_ratio > 0);
    const auto out = Decoded(*payloads, ThreeChunks(), 1000);
    size_t nonzero = 0;
    for (size_t i = 0; i < 1000; ++i) {
      sent[i] += out[i];
      if (out[i] != 0.0f) {
        ++nonzero;
        CHECK(layer->momentum()[i] == 0.0f);  // masked
      } else {
        CHECK(layer->momentum()[i] == u[i]);
      }
    }
    CHECK(nonzero == 20 + 20 + 10);  // 5% of each chunk
  }
  for (size_t i = 0; i < 1000; ++i) {
    REQUIRE(std::fabs(sent[i] + layer->residual()[i] - fed[i]) <= 1e-3 * (1 + std::fabs(fed[i])));
  }
  // Switching to uncompressed flushes the residual.
  const auto g = Gradient(1000, 7);
  std::vector<float> want(1000);
  for (size_t i = 0; i < 1000; ++i) want[i] = g[i] + layer->residual()[i];
  CodecParams none;
  auto flushed = layer->Compress(g, none);
  REQUIRE(flushed.ok());
  CHECK(Decoded(*flushed, ThreeChunks(), 1000) == want);
  for (float r : layer->residual()) CHECK(r == 0.0f);
  for (float v : layer->momentum()) CHECK(v == 0.0f);
}

TEST_CASE("each chunk is ready before the next is encoded, with the same payloads") {
  auto streamed = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
  auto whole = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
  REQUIRE(streamed.ok());
  REQUIRE(whole.ok());
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  topk.density = 0.05f;
  for (uint64_t step = 0; step < 3; ++step) {
    const auto g = Gradient(1000, 10 + step);
    std::vector<std::vector<uint8_t>> payloads;
    std::vector<size_t> order;
    REQUIRE(streamed
                ->CompressInto(g, topk, &payloads, nullptr,
                               [&](size_t c) {
                                 order.push_back(c);
                                 CHECK_FALSE(payloads[c].empty());
                                 if (c + 1 < payloads.size()) CHECK(payloads[c + 1].empty());
                               })
                .ok());
    CHECK(order == std::vector<size_t>{0, 1, 2});
    auto expected = whole->Compress(g, topk);
    REQUIRE(expected.ok());
    CHECK(payloads == *expected);
  }
  // Momentum and residual evolve the same either way.
  CHECK(std::equal(streamed->momentum().begin(), streamed->momentum().end(),
                   whole->momentum().begin()));
  CHECK(std::equal(streamed->residual().begin(), streamed->residual().end(),
                   whole->residual().begin()));
}

TEST_CASE("the gradient is not read once the last chunk is ready") {
  // The push's ticket can complete as soon as the last chunk is sent, and
  // the trainer then reuses (or frees) the gradient's buffer.
  CodecParams none;
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  topk.density = 0.05f;
  for (const CodecParams& params : {none, topk}) {
    auto layer = LayerCompressor::Create(1000, ThreeChunks(), 0.9f);
    REQUIRE(layer.ok());
    std::vector<float> g = Gradient(1000, 7);
    double norm = 0;
    for (float x : g) norm += double(x) * x;
    norm = std::sqrt(norm);
    std::vector<std::vector<uint8_t>> payloads;
    CompressionStats stats;
    REQUIRE(layer
                ->CompressInto(g, params, &payloads, &stats,
                               [&](size_t c) {
                                 if (c == 2) std::fill(g.begin(), g.end(), 1e30f);
                               })
                .ok());
    CHECK(stats.gradient_norm == Approx(norm));
    CHECK(stats.residual_ratio < 1.0);
  }
}

TEST_CASE("bad layers and gradients are refused without changes") {
  CHECK_FALSE(LayerCompressor::Create(1000, {{0, 0, 400}, {1, 500, 500}}, 0.9f).ok());
  CHECK_FALSE(LayerCompressor::Create(1000, {{0, 0, 400}}, 0.9f).ok());
  CHECK_FALSE(LayerCompressor::Create(1000, ThreeChunks(), 1.0f).ok());
  auto layer = LayerCompressor::Create(1000, ThreeChunks(), 0.5f);
  REQUIRE(layer.ok());
  CodecParams topk;
  topk.codec = CodecId::kTopK;
  REQUIRE(layer->Compress(Gradient(1000, 3), topk).ok());
  const std::vector<float> residual(layer->residual().begin(), layer->residual().end());
  auto g = Gradient(1000, 4);
  g[900] = NAN;  // in the last chunk
  CHECK(layer->Compress(g, topk).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::vector<float>(layer->residual().begin(), layer->residual().end()) == residual);
  CHECK_FALSE(layer->Compress(Gradient(999, 5), topk).ok());
}

}  // namespace
}  // namespace leeway
