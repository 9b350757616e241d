#include "server/checkpointer.h"

#include "core/common/logging.h"
#include "core/common/thread_name.h"

namespace leeway {

Checkpointer::Checkpointer(ServerCore* core, std::unique_ptr<CheckpointStore> store,
                           absl::Duration interval)
    : core_(core), store_(std::move(store)), interval_(interval) {}

Checkpointer::~Checkpointer() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

absl::Status Checkpointer::RestoreNewest() {
  uint64_t seq = 0;
  absl::StatusOr<CheckpointContents> contents = store_->ReadNewest(&seq);
  if (!contents.ok()) return contents.status();
  for (ChunkRecord& rec : contents->chunks) {
    absl::Status added = core_->AddChunk(rec.info, rec.optimizer);
    if (!added.ok()) return added;
    absl::StatusOr<Chunk*> chunk = core_->FindChunk(rec.info.layer, rec.info.chunk);
    if (!chunk.ok()) return chunk.status();
    rec.state.version += kRestartVersionStep;
    absl::Status restored = (*chunk)->Restore(rec.state);
    if (!restored.ok()) return restored;
  }
  for (const WorkerClock& clock : contents->clocks) {
    core_->tracker().RestoreView(clock.rank, clock.clock);
  }
  LEEWAY_LOG(INFO) << "restored checkpoint " << seq << ": "
                   << contents->chunks.size() << " chunks, "
                   << contents->clocks.size() << " worker clocks";
  return absl::OkStatus();
}

void Checkpointer::Start() {
  if (interval_ <= absl::ZeroDuration()) return;
  thread_ = std::thread([this] {
    NameThisThread("lw-checkpoint");
    while (!stop_.WaitForNotificationWithTimeout(interval_)) {
      absl::StatusOr<uint64_t> seq = WriteNow();
      if (!seq.ok()) {
        LEEWAY_LOG(ERROR) << "checkpoint failed: " << seq.status();
      }
    }
  });
}

absl::StatusOr<uint64_t> Checkpointer::WriteNow() {
  absl::MutexLock lock(&write_mu_);
  CheckpointContents contents;
  for (Chunk* chunk : core_->Chunks()) {
    if (!chunk->initialized()) continue;
    contents.chunks.push_back({chunk->info(), chunk->optimizer(), chunk->Snapshot()});
  }
  for (const auto& [rank, view] : core_->tracker().Views()) {
    contents.clocks.push_back({rank, view});
  }
  absl::StatusOr<uint64_t> seq = store_->Write(contents);
  if (seq.ok()) {
    LEEWAY_LOG(INFO) << "wrote checkpoint " << *seq << " (" << contents.chunks.size()
                     << " chunks)";
  }
  return seq;
}

}  // namespace leeway
