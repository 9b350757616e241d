#include "server/data_service.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/thread_name.h"
#include "core/transport/pull_batch.h"
#include "core/transport/push_batch.h"
#include "kernels/codec.h"
#include "kernels/payload.h"

namespace leeway {
namespace {

uint64_t ChunkKey(uint32_t layer, uint32_t chunk) {
  return (uint64_t{layer} << 32) | chunk;
}

// Read tasks get keys of their own, above every chunk key's layer range,
// so reads never wait behind one another.
constexpr uint64_t kReadKeyBase = uint64_t{1} << 63;

// The codec of a pull's answer (0 for "not modified").
uint8_t ReplyCodec(const PullReply& reply) {
  if (reply.payload().empty()) return 0;
  auto payload = ReadPayloadHeader(reply.payload());
  return payload.ok() ? static_cast<uint8_t>(payload->codec) : 0;
}

// What an entry of a pull batch's reply adds to its chunk's dense size, at
// most: the entry header, a codec payload header, padding.
constexpr uint64_t kPullBatchEntryBound = 128;

}  // namespace

DataService::DataService(ServerCore* core, Transport* transport,
                         const DataServiceOptions& options)
    : core_(core),
      transport_(transport),
      options_(options),
      pool_(options.apply_threads) {}

DataService::~DataService() {
  for (MessageKind kind : {MessageKind::kPush, MessageKind::kPushBatch, MessageKind::kPull,
                           MessageKind::kPullBatch, MessageKind::kClock}) {
    transport_->SetHandler(kind, nullptr);
  }
  transport_->SetPeerLostHandler(nullptr);
  stop_.Notify();
  if (expiry_.joinable()) expiry_.join();
  // Pulls still parked get an answer, not silence.
  core_->ExpirePulls(absl::InfiniteFuture());
  pool_.Drain();
}

void DataService::Start() {
  transport_->SetHandler(MessageKind::kPush, [this](Message m) { OnPush(std::move(m)); });
  transport_->SetHandler(MessageKind::kPushBatch, [this](Message m) { OnPushBatch(std::move(m)); });
  transport_->SetHandler(MessageKind::kPull, [this](Message m) { OnPull(std::move(m)); });
  transport_->SetHandler(MessageKind::kPullBatch, [this](Message m) { OnPullBatch(std::move(m)); });
  transport_->SetHandler(MessageKind::kClock, [this](Message m) { OnClock(std::move(m)); });
  transport_->SetPeerLostHandler(
      [this](PeerId peer, const absl::Status&) { OnPeerLost(peer); });
  expiry_ = std::thread([this] {
    NameThisThread("lw-pull-expiry");
    while (!stop_.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
      core_->ExpirePulls(absl::Now());
    }
  });
}

void DataService::Fail(const Message& m, const absl::Status& status) {
  LEEWAY_LOG_EVERY_N_SEC(WARNING, 5)
      << "refused " << MessageKindName(m.header.kind) << " from rank "
      << m.header.sender_rank << ": " << status;
  if (m.header.expects_reply()) transport_->ReplyError(m, status);
}

void DataService::RememberPeer(PeerId peer, uint32_t rank) {
  absl::MutexLock lock(&peers_mu_);
  rank_of_peer_[peer] = rank;
}

void DataService::OnPeerLost(PeerId peer) {
  uint32_t rank;
  {
    absl::MutexLock lock(&peers_mu_);
    auto it = rank_of_peer_.find(peer);
    if (it == rank_of_peer_.end()) return;
    rank = it->second;
    rank_of_peer_.erase(it);
  }
  if (options_.leave_on_peer_loss) {
    LEEWAY_LOG(WARNING) << "worker " << rank << " lost; it leaves the clock set";
    core_->Leave(rank);
  }
}

void DataService::OnClock(Message m) {
  const WireHeader& h = m.header;
  WireHeader reply;
  reply.kind = MessageKind::kClock;
  if ((h.flags & kFlagInitial) != 0) {
    RememberPeer(m.peer, h.sender_rank);
    reply.clock = core_->Join(h.sender_rank, h.clock);
    LEEWAY_LOG(INFO) << "worker " << h.sender_rank << " joined at clock "
                     << reply.clock;
  } else {
    absl::Status status = core_->Clock(h.sender_rank, h.clock, h.element_count);
    if (!status.ok()) return Fail(m, status);
    reply.clock = h.clock;
  }
  if (h.expects_reply()) transport_->Reply(m, reply, {});
  if ((h.flags & kFlagInitial) == 0) PublishAhead(h.clock);
}

void DataService::PublishAhead(uint32_t clock) {
  uint32_t begun = publishing_clock_.load();
  do {
    if (clock <= begun) return;  // another CLOCK of this clock began it
  } while (!publishing_clock_.compare_exchange_weak(begun, clock));
  std::vector<Chunk*> chunks = core_->Chunks();
  chunks.erase(std::remove_if(chunks.begin(), chunks.end(),
                              [](const Chunk* c) { return !c->sparse_pulls(); }),
               chunks.end());
  if (chunks.empty()) return;
  const size_t end = chunks.size();
  PublishFrom(std::make_shared<const std::vector<Chunk*>>(std::move(chunks)), end, clock);
}

void DataService::PublishFrom(std::shared_ptr<const std::vector<Chunk*>> chunks, size_t end,
                              uint32_t clock) {
  // One task at a time (in the chunk's queue, after its pushes so far),
  // yielding to pushes and reads: the pool's other threads stay free for
  // the clock's pulls.
  Chunk* chunk = (*chunks)[end - 1];
  pool_.SubmitIdle(ChunkKey(chunk->info().layer, chunk->info().chunk),
                   [this, chunks = std::move(chunks), end, clock] {
                     const bool made = (*chunks)[end - 1]->PublishFor(clock);
                     if (made && end > 1 && publishing_clock_.load() == clock) {
                       PublishFrom(chunks, end - 1, clock);
                     }
                   });
}

void DataService::PublishWhenPushed(uint32_t rank, uint32_t layer, uint32_t chunk, uint32_t clock) {
  absl::StatusOr<Chunk*> target = core_->FindChunk(layer, chunk);
  if (!target.ok() || !(*target)->sparse_pulls()) return;
  if ((*target)->NotePush(rank, clock) < core_->tracker().LiveWorkers()) return;
  pool_.SubmitIdle(ChunkKey(layer, chunk), [c = *target, clock] { c->PublishFor(clock + 1); });
}

void DataService::OnPush(Message m) {
  auto shared = std::make_shared<Message>(std::move(m));
  pool_.Submit(ChunkKey(shared->header.layer, shared->header.chunk), [this, shared] {
    if ((shared->header.flags & kFlagInitial) != 0) {
      Initialize(*shared);
    } else {
      ApplyPush(*shared);
    }
  });
}

void DataService::Initialize(const Message& m) {
  const WireHeader& h = m.header;
  const uint32_t n = h.element_count;
  if (options_.declare_on_initial_push && !core_->FindChunk(h.layer, h.chunk).ok()) {
    absl::Status declared = core_->AddChunk(ChunkInfo{h.layer, h.chunk, 0, n},
                                            options_.default_optimizer);
    if (!declared.ok()) {
      core_->CountBadMessage();
      return Fail(m, declared);
    }
  }
  std::vector<float> values(n);
  absl::Status decoded = Decode(m.payload, absl::MakeSpan(values), 1);
  if (!decoded.ok()) {
    core_->CountBadMessage();
    return Fail(m, decoded);
  }
  absl::StatusOr<bool> taken = core_->Initialize(h.layer, h.chunk, values);
  if (!taken.ok()) return Fail(m, taken.status());
  if (h.expects_reply()) {
    WireHeader reply;
    reply.kind = MessageKind::kPush;
    reply.layer = h.layer;
    reply.chunk = h.chunk;
    reply.element_count = *taken ? 1 : 0;  // 1: these values were taken
    transport_->Reply(m, reply, {});
  }
}

void DataService::ApplyPush(const Message& m) {
  const WireHeader& h = m.header;
  absl::StatusOr<uint64_t> version =
      core_->Push(h.sender_rank, h.layer, h.chunk, h.clock, m.payload);
  if (!version.ok()) return Fail(m, version.status());
  PublishWhenPushed(h.sender_rank, h.layer, h.chunk, h.clock);
  if (h.expects_reply()) {
    WireHeader reply;
    reply.kind = MessageKind::kPush;
    reply.layer = h.layer;
    reply.chunk = h.chunk;
    reply.version = *version;
    transport_->Reply(m, reply, {});
  }
}

// A batch's entries apply like single pushes, each on its chunk's queue;
// the last one to finish sends the batch's reply.
struct DataService::PendingBatch {
  Message message;
  std::vector<PushBatchEntry> entries;
  std::vector<absl::StatusOr<uint64_t>> results;
  std::atomic<size_t> unfinished{0};
};

void DataService::OnPushBatch(Message m) {
  auto batch = std::make_shared<PendingBatch>();
  batch->message = std::move(m);
  const WireHeader& h = batch->message.header;
  absl::StatusOr<std::vector<PushBatchEntry>> entries =
      h.is_reply() ? absl::InvalidArgumentError("a push batch reply sent to a server")
                   : DecodePushBatch(batch->message.payload, h.element_count);
  if (!entries.ok()) {
    core_->CountBadMessage();
    return Fail(batch->message, entries.status());
  }
  batch->entries = *std::move(entries);
  batch->results.resize(batch->entries.size(), absl::UnknownError("not applied"));
  batch->unfinished = batch->entries.size();
  for (size_t i = 0; i < batch->entries.size(); ++i) {
    const PushBatchEntry& entry = batch->entries[i];
    pool_.Submit(ChunkKey(entry.layer, entry.chunk), [this, batch, i] {
      const PushBatchEntry& e = batch->entries[i];
      const WireHeader& header = batch->message.header;
      batch->results[i] =
          core_->Push(header.sender_rank, e.layer, e.chunk, header.clock, e.payload);
      if (batch->results[i].ok())
        PublishWhenPushed(header.sender_rank, e.layer, e.chunk, header.clock);
      if (batch->unfinished.fetch_sub(1) != 1 || !header.expects_reply()) return;
      WireHeader reply;
      reply.kind = MessageKind::kPushBatch;
      reply.clock = header.clock;
      reply.element_count = header.element_count;
      transport_->Reply(batch->message, reply, EncodePushBatchReply(batch->results));
    });
  }
}

void DataService::OnPull(Message m) {
  auto shared = std::make_shared<Message>(std::move(m));
  const WireHeader& h = shared->header;
  core_->WhenReadable(
      h.sender_rank, h.layer, h.chunk, h.clock,
      absl::Now() + options_.max_pull_wait,
      [this, shared](absl::StatusOr<Chunk*> chunk) {
        if (!chunk.ok()) return Fail(*shared, chunk.status());
        // Reading (and encoding) a chunk is real work: off the thread that
        // made the pull ready, which may be the progress thread.
        Chunk* target = *chunk;
        pool_.Submit(kReadKeyBase | next_read_key_.fetch_add(1), [this, shared, target] {
          absl::StatusOr<PullReply> reply =
              target->Read(shared->header.version, shared->header.clock);
          if (!reply.ok()) return Fail(*shared, reply.status());
          WireHeader header;
          header.kind = MessageKind::kPullReply;
          header.layer = shared->header.layer;
          header.chunk = shared->header.chunk;
          header.clock = shared->header.clock;
          header.version = reply->version;
          header.element_count = target->info().elements;
          header.codec = ReplyCodec(*reply);
          // No copy: the body may be shared with other pulls (Chunk::Read).
          transport_->ReplyShared(*shared, header, std::move(reply->body));
        });
      });
}

void DataService::OnPullBatch(Message m) {
  auto shared = std::make_shared<Message>(std::move(m));
  const WireHeader& h = shared->header;
  absl::StatusOr<std::vector<PullBatchEntry>> decoded =
      h.is_reply() ? absl::InvalidArgumentError("a pull batch reply sent to a server")
                   : DecodePullBatch(shared->payload, h.element_count);
  if (!decoded.ok()) {
    core_->CountBadMessage();
    return Fail(*shared, decoded.status());
  }
  // The reply holds every entry's answer, each at most its chunk dense:
  // a batch whose answers could outgrow a message is refused up front.
  uint64_t bound = 0;
  for (const PullBatchEntry& e : *decoded) {
    absl::StatusOr<Chunk*> chunk = core_->FindChunk(e.layer, e.chunk);
    bound += kPullBatchEntryBound + (chunk.ok() ? uint64_t{(*chunk)->info().elements} * 4 : 0);
  }
  if (bound > transport_->options().limits.max_payload_bytes) {
    core_->CountBadMessage();
    return Fail(*shared, absl::InvalidArgumentError(
                             absl::StrCat("a pull batch whose reply could take ", bound,
                                          " bytes, over the message limit of ",
                                          transport_->options().limits.max_payload_bytes)));
  }
  auto entries = std::make_shared<std::vector<PullBatchEntry>>(*std::move(decoded));
  core_->WhenClockReadable(
      h.sender_rank, h.clock, absl::Now() + options_.max_pull_wait,
      [this, shared, entries](absl::Status ready) {
        if (!ready.ok()) return Fail(*shared, ready);
        // One task reads every entry (small chunks: the batch is for them).
        pool_.Submit(kReadKeyBase | next_read_key_.fetch_add(1), [this, shared, entries] {
          std::vector<uint8_t> body;
          for (const PullBatchEntry& e : *entries) {
            absl::StatusOr<Chunk*> chunk = core_->FindChunk(e.layer, e.chunk);
            if (!chunk.ok()) core_->CountBadMessage();
            absl::StatusOr<PullReply> reply =
                chunk.ok() ? (*chunk)->Read(e.version, shared->header.clock) : chunk.status();
            AppendPullBatchResult(reply.status(), reply.ok() ? reply->version : 0,
                                  reply.ok() ? ReplyCodec(*reply) : 0,
                                  reply.ok() ? reply->payload() : absl::Span<const uint8_t>(),
                                  &body);
          }
          WireHeader header;
          header.kind = MessageKind::kPullBatch;
          header.clock = shared->header.clock;
          header.element_count = shared->header.element_count;
          transport_->ReplyShared(*shared, header,
                                  std::make_shared<const std::vector<uint8_t>>(std::move(body)));
        });
      });
}

}  // namespace leeway
