#include "worker/push_batcher.h"

#include <algorithm>
#include <utility>

#include "core/transport/push_batch.h"

namespace leeway {

std::vector<PushBatch> PushBatcher::Add(ServerLink* server, uint32_t clock, uint32_t layer,
                                        uint32_t chunk, absl::Span<const uint8_t> payload,
                                        PushPart part, absl::Time now) {
  std::vector<PushBatch> ready;
  auto open = std::find_if(open_.begin(), open_.end(),
                           [server](const PushBatch& b) { return b.server == server; });
  const size_t grown =
      open == open_.end() ? 0 : open->bytes.size() + PushBatchEntryBytes(payload.size());
  if (open != open_.end() && (open->clock != clock || grown > options_.max_batch_bytes ||
                              open->parts.size() == kMaxPushBatchEntries)) {
    ready.push_back(std::move(*open));
    open_.erase(open);
    open = open_.end();
  }
  if (open == open_.end()) {
    PushBatch batch;
    batch.server = server;
    batch.clock = clock;
    batch.opened = now;
    batch.bytes.reserve(options_.max_batch_bytes);
    open_.push_back(std::move(batch));
    open = open_.end() - 1;
  }
  AppendPushBatchEntry(layer, chunk, payload, &open->bytes);
  open->parts.push_back(std::move(part));
  if (open->bytes.size() >= options_.max_batch_bytes) {
    ready.push_back(std::move(*open));
    open_.erase(open);
  }
  return ready;
}

absl::Time PushBatcher::OldestOpened() const {
  absl::Time oldest = absl::InfiniteFuture();
  for (const PushBatch& batch : open_) oldest = std::min(oldest, batch.opened);
  return oldest;
}

std::vector<PushBatch> PushBatcher::Take() { return TakeOpenedBefore(absl::InfiniteFuture()); }

std::vector<PushBatch> PushBatcher::TakeOpenedBefore(absl::Time time) {
  std::vector<PushBatch> taken;
  auto kept = open_.begin();
  for (auto it = open_.begin(); it != open_.end(); ++it) {
    if (it->opened < time) {
      taken.push_back(std::move(*it));
    } else {
      if (kept != it) *kept = std::move(*it);
      ++kept;
    }
  }
  open_.erase(kept, open_.end());
  return taken;
}

}  // namespace leeway
