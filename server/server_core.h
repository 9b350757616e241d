// The parameter server's logic at the level of messages, without the
// transport: chunks owned by this server, the SSP tracker, staleness
// accounting and bad-input counters. The data-plane glue (server.h) turns
// UCX messages into these calls; tests call them directly.
//
// Guarantees:
// - Push: the stamp is checked by the tracker, the payload fully validated
//   by the chunk, and only then applied; any refusal leaves the chunk and
//   the clocks as they were, counts a bad message, and returns the Status.
// - Pull: answered once the SSP condition holds (ssp_tracker.h), with the
//   chunk read at that moment (chunk.h: not modified, delta or dense, of
//   the parameters or, with a pull density, of the served copy);
//   waiting pulls are parked, never holding a thread.
// - Staleness of every applied push = the largest clock a live worker has
//   announced minus the push's stamp, in histograms overall, per worker and
//   per layer.
// Thread-safe; pushes to different chunks may run in parallel.
#ifndef LEEWAY_SERVER_SERVER_CORE_H_
#define LEEWAY_SERVER_SERVER_CORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "server/chunk.h"
#include "server/histogram.h"
#include "server/ssp_tracker.h"

namespace leeway {

struct ServerCoreOptions {
  int64_t staleness = 0;  // SspTracker::kAsync for ASP
  ChunkOptions chunk;  // change-stamp granularity, pull density
};

class ServerCore {
 public:
  using PullCallback = std::function<void(absl::StatusOr<PullReply>)>;

  explicit ServerCore(const ServerCoreOptions& options);

  // Declares a chunk this server owns. Declaring the same chunk again with
  // the same shape is a no-op; a different shape is an error.
  absl::Status AddChunk(const ChunkInfo& info, const OptimizerConfig& optimizer);
  absl::StatusOr<Chunk*> FindChunk(uint32_t layer, uint32_t chunk) const;
  // Every chunk, ordered by (layer, chunk).
  std::vector<Chunk*> Chunks() const;

  void Expect(uint32_t rank) { tracker_.Expect(rank); }
  uint32_t Join(uint32_t rank, uint32_t resume_at = 0) {
    return tracker_.Join(rank, resume_at);
  }
  void Leave(uint32_t rank) { tracker_.Leave(rank); }

  // Initial values (first writer wins); true when these were taken.
  absl::StatusOr<bool> Initialize(uint32_t layer, uint32_t chunk,
                                  absl::Span<const float> values);
  // Applies one push; returns the chunk's new version.
  absl::StatusOr<uint64_t> Push(uint32_t rank, uint32_t layer, uint32_t chunk,
                                uint32_t clock, absl::Span<const uint8_t> payload);
  absl::Status Clock(uint32_t rank, uint32_t clock, uint32_t pushes);
  // `done` runs exactly once: now, when the pull becomes ready (with the
  // chunk to read, on whichever thread made it ready), or with
  // DEADLINE_EXCEEDED once ExpirePulls passes `deadline`. Readiness only
  // grows, so the chunk may be read any time after.
  void WhenReadable(uint32_t rank, uint32_t layer, uint32_t chunk,
                    uint32_t clock, absl::Time deadline,
                    std::function<void(absl::StatusOr<Chunk*>)> done);
  // The same for every chunk at once: readiness depends on the worker and
  // the clock alone (a PULL_BATCH).
  void WhenClockReadable(uint32_t rank, uint32_t clock, absl::Time deadline,
                         std::function<void(absl::Status)> done) {
    tracker_.Pull(rank, clock, deadline, std::move(done));
  }
  // WhenReadable, then Chunk::Read(since_version) on that thread.
  void Pull(uint32_t rank, uint32_t layer, uint32_t chunk, uint32_t clock,
            uint64_t since_version, absl::Time deadline, PullCallback done);
  void ExpirePulls(absl::Time now) { tracker_.Expire(now); }

  // Counts a refused message (also used by the transport glue).
  void CountBadMessage() { bad_messages_.fetch_add(1); }
  uint64_t bad_messages() const { return bad_messages_.load(); }
  uint64_t pushes_applied() const { return pushes_applied_.load(); }

  HistogramSnapshot Staleness() const { return staleness_.Snapshot(); }
  std::map<uint32_t, HistogramSnapshot> StalenessByWorker() const;
  std::map<uint32_t, HistogramSnapshot> StalenessByLayer() const;

  const SspTracker& tracker() const { return tracker_; }
  SspTracker& tracker() { return tracker_; }

 private:
  enum class By { kWorker, kLayer };
  Histogram& HistogramFor(By by, uint32_t key) ABSL_LOCKS_EXCLUDED(stats_mu_);
  std::map<uint32_t, HistogramSnapshot> Snapshots(By by) const;

  const ServerCoreOptions options_;
  SspTracker tracker_;

  mutable absl::Mutex chunks_mu_;
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<Chunk>> chunks_
      ABSL_GUARDED_BY(chunks_mu_);

  std::atomic<uint64_t> bad_messages_{0};
  std::atomic<uint64_t> pushes_applied_{0};
  Histogram staleness_;
  mutable absl::Mutex stats_mu_;
  std::map<std::pair<By, uint32_t>, std::unique_ptr<Histogram>> keyed_
      ABSL_GUARDED_BY(stats_mu_);
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_SERVER_CORE_H_
