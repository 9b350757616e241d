// One chunk of a layer on a server: fp32 parameters, optimizer state, a
// version (push batches applied, and publications below) and, per block
// of elements (by default one element), the version of its last change,
// so that pulls can be answered with deltas that carry exactly the
// elements that changed.
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
// - Replies are built once per (since, version), the dense chunk once per
//   version: the other pulls naming the same versions (under BSP every
//   worker's pull of a clock) share the first one's payload instead of
//   scanning and copying the chunk again. This keeps up to one dense copy
//   of the chunk besides the parameters while its version is current.
// - Sparse payloads are applied lazily, O(nnz) (optimizer.h).
// - With a pull density d (ChunkOptions; chunks of at least
//   kSparsePullMinElements), pulls read a served copy instead of the
//   parameters: the first pull of a clock newer than any before publishes
//   the ceil(d n) elements where the parameters differ most from the copy
//   (top-k of the difference; what is not sent stays in the difference,
//   error feedback on the server), so a pull's delta holds about d n
//   elements per clock however many workers pushed. The served copy then
//   lags the parameters by that difference: every update from the clocks
//   SSP guarantees is in the copy or still in the difference. Deltas stay
//   exact with respect to the copy. A publication builds the reply to the
//   pulls holding the copy before it from what it selected: those pulls
//   (every worker's, each clock, when none falls behind) scan no stamps.
//   PublishFor makes a clock's publication ahead of its first pull;
//   NotePush tells when every worker has pushed the clock before it.
// Thread-safe.
#ifndef LEEWAY_SERVER_CHUNK_H_
#define LEEWAY_SERVER_CHUNK_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "kernels/topk_select.h"
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
  // The codec payload (none, or topk pairs); null when not modified.
  // Immutable: pulls of the same versions may share one (see Chunk::Read),
  // and the transport sends it without a copy.
  std::shared_ptr<const std::vector<uint8_t>> body;

  absl::Span<const uint8_t> payload() const {
    return body ? absl::MakeConstSpan(*body) : absl::Span<const uint8_t>();
  }
};

// What a checkpoint keeps of a chunk.
struct ChunkState {
  uint64_t version = 0;
  std::vector<float> params;
  std::vector<float> optimizer_state;
};

struct ChunkOptions {
  // Elements per change stamp. One: a delta carries exactly the changed
  // elements. Sparse pushes from a few workers touch a few percent of a
  // chunk, but scattered: with blocks of 8, a 4% union of top-1% sets
  // dirtied 28% of the blocks and deltas were larger than half the dense
  // chunk. A stamp costs 4 bytes an element, as much as the parameter.
  uint32_t block_elements = 1;
  // 0: pulls read the parameters; in (0, 1): the served copy (above).
  float pull_density = 0;
};

// Smaller chunks (biases, norms) are always pulled exactly.
constexpr uint32_t kSparsePullMinElements = 4096;

class Chunk {
 public:
  Chunk(const ChunkInfo& info, const OptimizerConfig& optimizer,
        const ChunkOptions& options = {});

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

  // `clock`: the pulling worker's clock (publishes the served copy when it
  // is newer than every clock before; ignored without a pull density).
  absl::StatusOr<PullReply> Read(uint64_t since_version, uint32_t clock = 0);
  // With a pull density: the publication Read would make for `clock`, made
  // now (a server makes it ahead of the clock's pulls). Returns false when
  // a publication for `clock` or a later one came first, or there is
  // nothing to publish for (no pull density, no initial values).
  bool PublishFor(uint32_t clock);
  // Counts an applied push from `rank` stamped `clock`; returns how many
  // workers have pushed this chunk at `clock` (0 when a push stamped later
  // came first: only the newest clock is counted).
  size_t NotePush(uint32_t rank, uint32_t clock);
  uint64_t version() const;
  bool sparse_pulls() const { return served_elements_ > 0; }

  ChunkState Snapshot() const;
  // Replaces everything (checkpoint restore); sizes must match.
  absl::Status Restore(const ChunkState& state);

 private:
  // The version pulls see: the parameters', or the served copy's.
  uint64_t ViewVersion() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return sparse_pulls() ? served_version_ : version_;
  }
  // Copies the elements of largest |params - served| into the served copy.
  void Publish(uint32_t clock) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Keeps the reply to pulls holding the served copy of version `since`
  // (the publication before): the blocks of `changed`, no scan.
  void RememberPublication(uint64_t since, absl::Span<const uint32_t> changed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The served copy set to the parameters: nothing differs.
  void ServeAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Everything changed at `version`: versions before it read dense.
  void MarkAllChanged(uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stamp that says "changed at `version`", rebasing first when
  // `version` is 2^32 or more past the base.
  uint32_t StampFor(uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A reply built before for these versions (since kNoVersion: the dense
  // chunk), or null.
  std::shared_ptr<const std::vector<uint8_t>> CachedReply(uint64_t since,
                                                          uint64_t version) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void RememberReply(uint64_t since, uint64_t version,
                     std::shared_ptr<const std::vector<uint8_t>> body) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const ChunkInfo info_;
  const OptimizerConfig optimizer_;
  const uint32_t block_elements_;
  const size_t served_elements_;  // k of a publication; 0: no served copy

  mutable absl::Mutex mu_;
  bool initialized_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<float> params_ ABSL_GUARDED_BY(mu_);
  std::vector<float> state_ ABSL_GUARDED_BY(mu_);
  // The served copy (empty without a pull density), the parameters'
  // version it was published at, and the clock that published it.
  std::vector<float> served_ ABSL_GUARDED_BY(mu_);
  uint64_t served_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t served_clock_ ABSL_GUARDED_BY(mu_) = 0;
  bool owed_ ABSL_GUARDED_BY(mu_) = false;  // the copy differs from the parameters
  // params - served, kept up to date element by element by sparse applies
  // (a publication need not compute it afresh), and how many of its
  // elements are not zero; stale after a dense apply until the next
  // publication recomputes it.
  std::vector<float> difference_ ABSL_GUARDED_BY(mu_);
  size_t differ_ ABSL_GUARDED_BY(mu_) = 0;
  bool difference_stale_ ABSL_GUARDED_BY(mu_) = false;
  TopKHint publish_hint_ ABSL_GUARDED_BY(mu_);  // carried between publications
  // The workers whose pushes stamped pushed_clock_ were applied (NotePush).
  uint32_t pushed_clock_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> pushers_ ABSL_GUARDED_BY(mu_);
  // Of the view pulls read (the parameters or the served copy):
  // block_stamps_[b] = version of block b's last change - stamp_base_;
  // 0: at or before stamp_base_. Deltas exist for versions >= stamp_base_.
  uint64_t stamp_base_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint32_t> block_stamps_ ABSL_GUARDED_BY(mu_);

  // Replies built for the view's current version: deltas from a few
  // since-versions (SSP's pullers hold different ones) and the dense chunk
  // (since kNoVersion); taken with mu_ held at least shared, so a version
  // cannot change under a lookup.
  struct Built {
    uint64_t since;
    uint64_t version;
    std::shared_ptr<const std::vector<uint8_t>> body;
  };
  mutable absl::Mutex cache_mu_ ABSL_ACQUIRED_AFTER(mu_);
  mutable std::vector<Built> replies_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_CHUNK_H_
