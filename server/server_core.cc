#include "server/server_core.h"

#include "absl/strings/str_cat.h"

namespace leeway {

ServerCore::ServerCore(const ServerCoreOptions& options)
    : options_(options), tracker_(options.staleness) {}

absl::Status ServerCore::AddChunk(const ChunkInfo& info,
                                  const OptimizerConfig& optimizer) {
  absl::Status valid = ValidateOptimizer(optimizer);
  if (!valid.ok()) return valid;
  if (info.elements == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "layer ", info.layer, " chunk ", info.chunk, " has no elements"));
  }
  absl::MutexLock lock(&chunks_mu_);
  auto& slot = chunks_[{info.layer, info.chunk}];
  if (slot != nullptr) {
    const ChunkInfo& have = slot->info();
    if (have.offset != info.offset || have.elements != info.elements ||
        slot->optimizer().kind != optimizer.kind) {
      return absl::AlreadyExistsError(absl::StrCat(
          "layer ", info.layer, " chunk ", info.chunk,
          " is already declared with another shape or optimizer"));
    }
    return absl::OkStatus();
  }
  slot = std::make_unique<Chunk>(info, optimizer, options_.chunk);
  return absl::OkStatus();
}

absl::StatusOr<Chunk*> ServerCore::FindChunk(uint32_t layer,
                                             uint32_t chunk) const {
  absl::MutexLock lock(&chunks_mu_);
  auto it = chunks_.find({layer, chunk});
  if (it == chunks_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "layer ", layer, " chunk ", chunk, " is not on this server"));
  }
  return it->second.get();
}

std::vector<Chunk*> ServerCore::Chunks() const {
  absl::MutexLock lock(&chunks_mu_);
  std::vector<Chunk*> all;
  for (const auto& [key, chunk] : chunks_) all.push_back(chunk.get());
  return all;
}

absl::StatusOr<bool> ServerCore::Initialize(uint32_t layer, uint32_t chunk,
                                            absl::Span<const float> values) {
  absl::StatusOr<Chunk*> found = FindChunk(layer, chunk);
  absl::StatusOr<bool> taken =
      found.ok() ? (*found)->Initialize(values) : found.status();
  if (!taken.ok()) CountBadMessage();
  return taken;
}

absl::StatusOr<uint64_t> ServerCore::Push(uint32_t rank, uint32_t layer,
                                          uint32_t chunk, uint32_t clock,
                                          absl::Span<const uint8_t> payload) {
  absl::StatusOr<Chunk*> found = FindChunk(layer, chunk);
  if (!found.ok()) {
    CountBadMessage();
    return found.status();
  }
  absl::StatusOr<uint64_t> session = tracker_.ReceivePush(rank, clock);
  if (!session.ok()) {
    CountBadMessage();
    return session.status();
  }
  absl::StatusOr<uint64_t> version = (*found)->Apply(payload);
  if (!version.ok()) {
    tracker_.PushDropped(rank, clock, *session);
    CountBadMessage();
    return version.status();
  }
  const uint32_t max_clock = tracker_.MaxClock();
  const uint64_t staleness = max_clock > clock ? max_clock - clock : 0;
  staleness_.Add(staleness);
  HistogramFor(By::kWorker, rank).Add(staleness);
  HistogramFor(By::kLayer, layer).Add(staleness);
  pushes_applied_.fetch_add(1);
  tracker_.PushApplied(rank, clock, *session);
  return version;
}

absl::Status ServerCore::Clock(uint32_t rank, uint32_t clock, uint32_t pushes) {
  absl::Status status = tracker_.Clock(rank, clock, pushes);
  if (!status.ok()) CountBadMessage();
  return status;
}

void ServerCore::WhenReadable(uint32_t rank, uint32_t layer, uint32_t chunk,
                              uint32_t clock, absl::Time deadline,
                              std::function<void(absl::StatusOr<Chunk*>)> done) {
  absl::StatusOr<Chunk*> found = FindChunk(layer, chunk);
  if (!found.ok()) {
    CountBadMessage();
    done(found.status());
    return;
  }
  Chunk* target = *found;
  tracker_.Pull(rank, clock, deadline,
                [target, done = std::move(done)](absl::Status ready) {
                  if (ready.ok()) {
                    done(target);
                  } else {
                    done(ready);
                  }
                });
}

void ServerCore::Pull(uint32_t rank, uint32_t layer, uint32_t chunk,
                      uint32_t clock, uint64_t since_version,
                      absl::Time deadline, PullCallback done) {
  WhenReadable(rank, layer, chunk, clock, deadline,
               [since_version, clock, done = std::move(done)](absl::StatusOr<Chunk*> c) {
                 if (!c.ok()) {
                   done(c.status());
                 } else {
                   done((*c)->Read(since_version, clock));
                 }
               });
}

Histogram& ServerCore::HistogramFor(By by, uint32_t key) {
  absl::MutexLock lock(&stats_mu_);
  auto& slot = keyed_[{by, key}];
  if (slot == nullptr) slot = std::make_unique<Histogram>();
  return *slot;
}

std::map<uint32_t, HistogramSnapshot> ServerCore::Snapshots(By by) const {
  absl::MutexLock lock(&stats_mu_);
  std::map<uint32_t, HistogramSnapshot> out;
  for (const auto& [key, histogram] : keyed_) {
    if (key.first == by) out[key.second] = histogram->Snapshot();
  }
  return out;
}

std::map<uint32_t, HistogramSnapshot> ServerCore::StalenessByWorker() const {
  return Snapshots(By::kWorker);
}

std::map<uint32_t, HistogramSnapshot> ServerCore::StalenessByLayer() const {
  return Snapshots(By::kLayer);
}

}  // namespace leeway
