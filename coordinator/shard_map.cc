#include "coordinator/shard_map.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace leeway {

absl::StatusOr<std::vector<ChunkPlacement>> BuildShardMap(
    const std::vector<LayerShape>& layers, uint32_t servers,
    uint64_t chunk_bytes) {
  if (servers == 0) return absl::InvalidArgumentError("no servers to place chunks on");
  absl::flat_hash_map<uint32_t, uint32_t> element_bytes;
  std::vector<ChunkPlacement> chunks;
  for (const LayerShape& layer : layers) {
    if (layer.elements == 0 || layer.element_bytes == 0) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", layer.id, " (", layer.name,
                                                     ") is empty"));
    }
    if (!element_bytes.emplace(layer.id, layer.element_bytes).second) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", layer.id, " declared twice"));
    }
    const uint64_t per_chunk = chunk_bytes / layer.element_bytes;
    if (per_chunk == 0) {
      return absl::InvalidArgumentError(absl::StrCat("chunk_bytes ", chunk_bytes,
                                                     " holds no element"));
    }
    const uint64_t count = (layer.elements + per_chunk - 1) / per_chunk;
    if (count > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(absl::StrCat("layer ", layer.id, " needs ", count,
                                                     " chunks"));
    }
    // Near-equal chunks: the first `extra` get one element more.
    const uint64_t base = layer.elements / count;
    const uint64_t extra = layer.elements % count;
    uint64_t offset = 0;
    for (uint64_t c = 0; c < count; ++c) {
      const uint64_t size = base + (c < extra ? 1 : 0);
      if (size > std::numeric_limits<uint32_t>::max()) {
        return absl::InvalidArgumentError("a chunk over 2^32 - 1 elements");
      }
      chunks.push_back({layer.id, static_cast<uint32_t>(c), offset, size, 0});
      offset += size;
    }
  }
  auto bytes = [&](const ChunkPlacement& c) { return c.elements * element_bytes[c.layer]; };
  // Largest first; ties by (layer, chunk) so that the order is total.
  std::vector<size_t> order(chunks.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return bytes(chunks[a]) > bytes(chunks[b]);
  });
  // Min-heap of (bytes so far, rank).
  using Load = std::pair<uint64_t, uint32_t>;
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (uint32_t s = 0; s < servers; ++s) least.push({0, s});
  for (size_t i : order) {
    Load load = least.top();
    least.pop();
    chunks[i].server = load.second;
    load.first += bytes(chunks[i]);
    least.push(load);
  }
  return chunks;
}

std::vector<uint64_t> ServerBytes(const std::vector<ChunkPlacement>& map,
                                  const std::vector<LayerShape>& layers,
                                  uint32_t servers) {
  absl::flat_hash_map<uint32_t, uint32_t> element_bytes;
  for (const LayerShape& l : layers) element_bytes[l.id] = l.element_bytes;
  std::vector<uint64_t> per_server(servers, 0);
  for (const ChunkPlacement& c : map) {
    if (c.server < servers) per_server[c.server] += c.elements * element_bytes[c.layer];
  }
  return per_server;
}

double Imbalance(const std::vector<uint64_t>& server_bytes) {
  if (server_bytes.empty()) return 1.0;
  const double total = std::accumulate(server_bytes.begin(), server_bytes.end(), 0.0);
  if (total == 0) return 1.0;
  const double max = *std::max_element(server_bytes.begin(), server_bytes.end());
  return max / (total / server_bytes.size());
}

}  // namespace leeway
