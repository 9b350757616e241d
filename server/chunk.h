// One chunk of a layer on a server: fp32 parameters, optimizer state, a
// version (push batches applied) and, per block of elements, the version
// of its last change, so that pulls can be answered with deltas.
//
// Guarantees:
// - Apply validates the whole payload (kernels' decoders) before touching
//   anything: a bad push leaves the chunk exactly as it was.
// - Applies to one chunk are serialized in the order they take the lock;
//   reads see the state between two applies, never a torn one.
// - Read(since) answers with whichever is smallest: not modified (since is
//   the current version), a delta (the current values of every element in
//   a block changed after `since`, as a sparse payload; applied over a copy
//   at version `since` it reproduces the chunk bit for bit), or the dense
//   chunk (always when `since` is kNoVersion, or any version this chunk
//   never had, e.g. after a restart from an older checkpoint).
// - Sparse payloads are applied lazily, O(nnz) (optimizer.h).
// Thread-safe.
#ifndef LEEWAY_SERVER_CHUNK_H_
#define LEEWAY_SERVER_CHUNK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "server/optimizer.h"

namespace leeway {

struct ChunkInfo {
  uint32_t layer = 0;
  uint32_t chunk = 0;
  uint64_t offset = 0;    // of the chunk's first element in the layer
  uint32_t elements = 0;
};

// What a puller that holds no copy names as its version.
constexpr uint64_t kNoVersion = ~uint64_t{0};

struct PullReply {
  enum class Form { kNotModified, kDense, kDelta };
  Form form = Form::kNotModified;
  uint64_t version = 0;
  std::vector<uint8_t> payload;  // a codec payload (none, or topk pairs)
};

// What a checkpoint keeps of a chunk.
struct ChunkState {
  uint64_t version = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;
};

class Chunk {
 public:
  static constexpr uint32_t kDefaultBlockElements = 8;

  Chunk(const ChunkInfo& info, const OptimizerConfig& optimizer,
        uint32_t block_elements = kDefaultBlockElements);

  const ChunkInfo& info() const { return info_; }
  const OptimizerConfig& optimizer() const { return optimizer_; }

  // Sets the initial values once. Returns true if these values were taken,
  // false if the chunk was already initialized (first writer wins).
  absl::StatusOr<bool> Initialize(absl::Span<const float> values);
  bool initialized() const;

  // Decodes `payload` (any codec) and applies it with the optimizer scaled
  // by `scale`; returns the new version.
  absl::StatusOr<uint64_t> Apply(absl::Span<const uint8_t> payload,
                                 float scale = 1.0f);

  absl::StatusOr<PullReply> Read(uint64_t since_version) const;
  uint64_t version() const;

  ChunkState Snapshot() const;
  // Replaces everything (checkpoint restore); sizes must match.
  absl::Status Restore(const ChunkState& state);

 private:
  void MarkAllChanged(uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ChunkInfo info_;
  const OptimizerConfig optimizer_;
  const uint32_t block_elements_;

  mutable absl::Mutex mu_;
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<float> params_ ABSL_GUARDED_BY(mu_);
  std::vector<float> state_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> block_versions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_CHUNK_H_
