// PushBatcher: the push thread's gathering of small chunk pushes into
// PUSH_BATCH messages (core/transport/push_batch.h), one open batch per
// server. A layer of a few thousand elements costs its server one receive,
// one apply hand-over and one reply whichever way it goes, so ResNet-50's
// hundred-odd norm and bias layers cost a few messages instead of a
// hundred; large chunks go on alone, without the copy.
//
// Guarantees: a batch holds the pushes of one server and one clock, in the
// order they were added, and never grows past `max_batch_bytes` unless a
// single entry does; Add hands back every batch that must go out now (full,
// or superseded by a push of another clock). Whatever is left open goes out
// on Take/TakeOpenedBefore: the caller flushes when it runs out of work,
// so no push waits on one that is never made. Not thread-safe: one push
// thread owns it.
#ifndef LEEWAY_WORKER_PUSH_BATCHER_H_
#define LEEWAY_WORKER_PUSH_BATCHER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"
#include "absl/types/span.h"
#include "worker/ticket_group.h"

namespace leeway {

struct ServerLink;

// One chunk push inside a message: the layer push it is part of.
struct PushPart {
  std::shared_ptr<TicketGroup> group;
  uint32_t layer = 0;
};

struct PushBatch {
  ServerLink* server = nullptr;
  uint32_t clock = 0;
  std::vector<uint8_t> bytes;   // the PUSH_BATCH payload
  std::vector<PushPart> parts;  // one per entry, in order
  absl::Time opened;
};

struct PushBatcherOptions {
  // A push whose payload is at most this many bytes joins a batch; 0 turns
  // batching off.
  size_t max_entry_bytes = 16 << 10;
  // A batch this big goes out at once.
  size_t max_batch_bytes = 64 << 10;
};

class PushBatcher {
 public:
  explicit PushBatcher(const PushBatcherOptions& options) : options_(options) {}

  // Whether a push of `payload_bytes` joins a batch (else it goes alone).
  bool Takes(size_t payload_bytes) const {
    return options_.max_entry_bytes > 0 && payload_bytes <= options_.max_entry_bytes;
  }
  // Adds a push of `layer`'s `chunk` to `server`'s batch; returns the
  // batches to send now, in order.
  std::vector<PushBatch> Add(ServerLink* server, uint32_t clock, uint32_t layer, uint32_t chunk,
                             absl::Span<const uint8_t> payload, PushPart part, absl::Time now);
  // Every open batch.
  std::vector<PushBatch> Take();
  // The open batches opened before `time`.
  std::vector<PushBatch> TakeOpenedBefore(absl::Time time);
  bool empty() const { return open_.empty(); }
  // When the oldest open batch was opened; InfiniteFuture when none is.
  absl::Time OldestOpened() const;

 private:
  const PushBatcherOptions options_;
  std::vector<PushBatch> open_;  // at most one per server, oldest first
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_PUSH_BATCHER_H_
