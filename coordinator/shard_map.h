// The shard map: layers split into chunks of at most `chunk_bytes` and
// assigned to servers so that every server holds about the same bytes.
//
// Each layer of E elements becomes ceil(E * element_bytes / chunk_bytes)
// chunks of near-equal size (they differ by one element at most). Chunks
// are placed greedily, largest first, each on the server with the fewest
// bytes so far (ties: lowest rank) - LPT scheduling, within 4/3 of the best
// possible maximum and, with many chunks, close to the mean. The result is
// a pure function of its inputs: every process computes the same map.
#ifndef LEEWAY_COORDINATOR_SHARD_MAP_H_
#define LEEWAY_COORDINATOR_SHARD_MAP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace leeway {

struct LayerShape {
  uint32_t id = 0;
  std::string name;
  uint64_t elements = 0;
  uint32_t element_bytes = 4;
};

struct ChunkPlacement {
  uint32_t layer = 0;
  uint32_t chunk = 0;
  uint64_t offset = 0;    // first element of the chunk in its layer
  uint64_t elements = 0;
  uint32_t server = 0;
};

// Refuses empty or duplicate layers, zero servers, and chunks that would
// hold fewer than one element or more than 2^32 - 1.
absl::StatusOr<std::vector<ChunkPlacement>> BuildShardMap(
    const std::vector<LayerShape>& layers, uint32_t servers,
    uint64_t chunk_bytes);

// Bytes per server of a map.
std::vector<uint64_t> ServerBytes(const std::vector<ChunkPlacement>& map,
                                  const std::vector<LayerShape>& layers,
                                  uint32_t servers);

// max server bytes / mean server bytes (1 is perfect balance).
double Imbalance(const std::vector<uint64_t>& server_bytes);

}  // namespace leeway

#endif  // LEEWAY_COORDINATOR_SHARD_MAP_H_
