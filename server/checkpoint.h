// Checkpoints of a server's chunks (parameters, optimizer state, versions)
// and of its workers' clocks, on local disk.
//
// A checkpoint is two files in the directory: ckpt-<seq>.data, then
// ckpt-<seq>.manifest (its size and CRC-32C, the worker clocks, and a CRC
// of its own). Each is written to a temporary name, fsynced, renamed, and
// the directory fsynced; the manifest goes last, so a checkpoint exists
// only once it is complete. Write keeps the newest `keep` checkpoints.
//
// ReadNewest returns the newest checkpoint that verifies, skipping (with a
// log line naming the reason) any whose manifest or data is missing,
// truncated or corrupt. Little-endian; decoding validates every size
// before it allocates or copies. Not thread-safe: one writer at a time.
#ifndef LEEWAY_SERVER_CHECKPOINT_H_
#define LEEWAY_SERVER_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/chunk.h"
#include "server/optimizer.h"

namespace leeway {

struct ChunkRecord {
  ChunkInfo info;
  OptimizerConfig optimizer;
  ChunkState state;
};

struct WorkerClock {
  uint32_t rank = 0;
  uint32_t clock = 0;
};

struct CheckpointContents {
  std::vector<ChunkRecord> chunks;
  std::vector<WorkerClock> clocks;
};

class CheckpointStore {
 public:
  CheckpointStore(std::string dir, int keep);

  // Writes a new checkpoint; returns its sequence number.
  absl::StatusOr<uint64_t> Write(const CheckpointContents& contents);
  // The newest complete one; NOT_FOUND when there is none.
  absl::StatusOr<CheckpointContents> ReadNewest(uint64_t* seq = nullptr) const;
  // Sequence numbers of the manifests present, newest first.
  std::vector<uint64_t> List() const;

  std::string DataPath(uint64_t seq) const;
  std::string ManifestPath(uint64_t seq) const;

 private:
  absl::StatusOr<CheckpointContents> Read(uint64_t seq) const;
  void Prune();

  const std::string dir_;
  const int keep_;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_CHECKPOINT_H_
