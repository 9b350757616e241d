// The worker's data-plane threads and pushes: compression and pushes
// (push thread), push acknowledgements (ack thread); the pull threads are
// in worker_pull.cc.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/thread_name.h"
#include "kernels/codec_cuda.h"
#include "worker/worker_impl.h"

namespace leeway {

void Worker::Impl::StartThreads() {
  PushBatcherOptions batching;
  batching.max_batch_bytes = options.push_batch_bytes;
  batching.max_entry_bytes = options.push_batch_bytes / 4;
  batcher = std::make_unique<PushBatcher>(batching);
  push_thread = std::thread([this] {
    NameThisThread("lw-push");
    PushLoop();
  });
  ack_thread = std::thread([this] {
    NameThisThread("lw-ack");
    AckLoop();
  });
  for (auto& server : servers) {
    ServerLink* s = server.get();
    s->thread = std::thread([this, s] {
      NameThisThread("lw-pull");
      PullLoop(s);
    });
  }
}

void Worker::Impl::StopThreads() {
  {
    absl::MutexLock lock(&push_mu);
    stopping = true;
  }
  for (auto& server : servers) {
    absl::MutexLock lock(&server->mu);
    server->stopping = true;
  }
  if (push_thread.joinable()) push_thread.join();
  if (ack_thread.joinable()) ack_thread.join();
  for (auto& server : servers) {
    if (server->thread.joinable()) server->thread.join();
  }
}

namespace {

// The longest a small push waits in a batch for more to join it (unless
// someone waits for it: FlushPushes).
constexpr absl::Duration kMaxBatchDelay = absl::Milliseconds(5);

}  // namespace

Ticket FailedTicket(absl::Status status) {
  auto group = TicketGroup::Create(1);
  group->PartDone(std::move(status));
  return group->ticket();
}

absl::Status DeviceCallRefusal(const char* call, uint32_t layer, size_t layers, const void* at) {
  if (layer >= layers) return absl::InvalidArgumentError(absl::StrCat("no layer ", layer));
  if (!DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError(
        absl::StrCat(call, " in device memory needs a CUDA build and a usable GPU"));
  }
  if (at == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(call, " of layer ", layer, " with a null device pointer"));
  }
  return absl::OkStatus();
}

Ticket Worker::Impl::Push(uint32_t layer, absl::Span<const float> gradient) {
  if (layer >= layers.size()) {
    return FailedTicket(absl::InvalidArgumentError(absl::StrCat("no layer ", layer)));
  }
  PushJob job;
  job.layer = layer;
  job.gradient = gradient;
  return QueuePush(std::move(job));
}

Ticket Worker::Impl::PushDevice(uint32_t layer, const float* gradient, void* stream) {
  absl::Status refused = DeviceCallRefusal("a push", layer, layers.size(), gradient);
  if (!refused.ok()) return FailedTicket(std::move(refused));
  PushJob job;
  job.layer = layer;
  job.device_gradient = gradient;
  job.stream = stream;
  return QueuePush(std::move(job));
}

Ticket Worker::Impl::QueuePush(PushJob job) {
  LayerState& state = layers[job.layer];
  job.clock = clock;
  // The last two clocks of a window: the report's own clock may finish its
  // bookkeeping after the report is built (the acks that end its pushes
  // can beat the push thread's statistics), the clock before never does.
  job.measure_residual = ReportDue(2);
  job.params = state.params;
  job.group = TicketGroup::Create(static_cast<int>(state.chunks.size()));
  Ticket ticket = job.group->ticket();
  pending_pushes.push_back(ticket);
  absl::MutexLock lock(&push_mu);
  push_queue.push_back(std::move(job));
  ++push_jobs_queued;
  return ticket;
}

namespace {

// What the push thread waits for: work, the end, or (while batches are
// open) Clock waiting for jobs whose pushes they hold.
struct PushWork {
  Worker::Impl* impl;
  bool batches_open;
  uint64_t jobs_flushed;  // the jobs whose pushes have all been sent
};

bool PushWorkReady(PushWork* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  return w->impl->stopping || !w->impl->push_queue.empty() ||
         (w->batches_open && w->impl->flush_through > w->jobs_flushed);
}

}  // namespace

void Worker::Impl::FlushPushes() {
  absl::MutexLock lock(&push_mu);
  flush_through = push_jobs_queued;
}

void Worker::Impl::PushLoop() {
  uint64_t jobs_run = 0;
  uint64_t jobs_flushed = 0;
  while (true) {
    std::optional<PushJob> job;
    {
      absl::MutexLock lock(&push_mu);
      // Open batches wait a little for more small pushes, unless Clock
      // waits for them or the push thread stops.
      PushWork work{this, !batcher->empty(), jobs_flushed};
      push_mu.AwaitWithDeadline(
          absl::Condition(&PushWorkReady, &work),
          work.batches_open ? batcher->OldestOpened() + kMaxBatchDelay : absl::InfiniteFuture());
      if (!push_queue.empty()) {
        job = std::move(push_queue.front());
        push_queue.pop_front();
      } else {
        if (stopping && !work.batches_open) {
          push_done = true;
          return;
        }
      }
    }
    if (job.has_value()) {
      RunPush(*std::move(job));
      ++jobs_run;
      // A busy push thread sends the batches that are due between jobs.
      for (PushBatch& batch : batcher->TakeOpenedBefore(absl::Now() - kMaxBatchDelay)) {
        SendBatch(std::move(batch));
      }
    } else {
      for (PushBatch& batch : batcher->Take()) SendBatch(std::move(batch));
    }
    if (batcher->empty()) jobs_flushed = jobs_run;
  }
}

void Worker::Impl::RunPush(PushJob job) {
  LayerState& layer = layers[job.layer];
  // Seeds differ per worker, layer and clock (stochastic rounding, randomk).
  job.params.seed = (uint64_t{session->registration().rank()} << 40) ^
                    (uint64_t{job.layer} << 24) ^ job.clock;
  auto payloads = std::make_shared<std::vector<std::vector<uint8_t>>>();
  size_t sent = 0;
  // Each chunk goes out as soon as it is encoded, while the next encodes;
  // small ones join their server's batch.
  auto send = [&](size_t i) {
    ChunkState& chunk = layer.chunks[i];
    const std::vector<uint8_t>& payload = (*payloads)[i];
    ++sent;
    PushPart part{job.group, job.layer};
    if (!batcher->Takes(payload.size())) {
      return SendPush(chunk.server, std::move(part), chunk.chunk, job.clock, payloads, payload);
    }
    for (PushBatch& batch : batcher->Add(chunk.server, job.clock, job.layer, chunk.chunk, payload,
                                         std::move(part), absl::Now())) {
      SendBatch(std::move(batch));
    }
  };
  const absl::Time start = absl::Now();
  CompressionStats stats;
  stats.measure_residual = job.measure_residual;
  absl::Status compressed = Compress(job, payloads.get(), &stats, send);
  const double encode_ms = absl::ToDoubleMilliseconds(absl::Now() - start);
  if (!compressed.ok()) {
    for (size_t i = sent; i < layer.chunks.size(); ++i) job.group->PartDone(compressed);
    return;
  }
  absl::MutexLock lock(&stats_mu);
  LayerWindowStats& s = layer_stats[job.layer];
  s.gradient_norm = stats.gradient_norm;
  if (job.measure_residual) s.residual_ratio = stats.residual_ratio;
  s.encode_ms += encode_ms;
  s.bytes_pushed += stats.payload_bytes;
  ++s.pushes;
  dense_bytes += layer.spec.elements() * sizeof(float);
  push_bytes += stats.payload_bytes;
}

void Worker::Impl::SendPush(ServerLink* server, PushPart part, uint32_t chunk, uint32_t clock,
                            std::shared_ptr<const void> keep_alive,
                            absl::Span<const uint8_t> payload) {
  PendingAck ack;
  const uint32_t layer = part.layer;
  ack.parts.push_back(std::move(part));
  ack.payload = std::move(keep_alive);
  Dispatch(server, std::move(ack),
           [&](ServerClient& client) { return client.PushAsync(layer, chunk, clock, payload); });
}

void Worker::Impl::SendBatch(PushBatch batch) {
  PendingAck ack;
  ack.batch = true;
  ack.parts = std::move(batch.parts);
  auto bytes = std::make_shared<const std::vector<uint8_t>>(std::move(batch.bytes));
  ack.payload = bytes;
  const auto entries = static_cast<uint32_t>(ack.parts.size());
  Dispatch(batch.server, std::move(ack), [&](ServerClient& client) {
    return client.PushBatchAsync(batch.clock, entries, *bytes);
  });
}

void Worker::Impl::Dispatch(ServerLink* server, PendingAck ack,
                            const std::function<Ticket(ServerClient&)>& send) {
  ack.sent = absl::Now();
  {
    // Counted and sent on one connection generation (recovery resets it).
    absl::MutexLock lock(&server->mu);
    if (server->failed.ok()) {
      server->pushes += static_cast<uint32_t>(ack.parts.size());
      ack.ticket = send(*server->client);
      ack.server = server;
      ack.generation = server->generation;
    } else {
      ack.ticket = FailedTicket(server->failed);
    }
  }
  absl::MutexLock lock(&push_mu);
  ack_queue.push_back(std::move(ack));
}

absl::Status Worker::Impl::Compress(const PushJob& job, std::vector<std::vector<uint8_t>>* payloads,
                                    CompressionStats* stats,
                                    const std::function<void(size_t)>& ready) {
  LayerState& layer = layers[job.layer];
  const bool device = job.device_gradient != nullptr;
  if (device ? layer.compressor != nullptr : layer.device_compressor != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "layer ", job.layer, " keeps its momentum and residual in ", device ? "host" : "device",
        " memory (its first push came from there): push it from ", device ? "host" : "device",
        " memory"));
  }
  if (device) {
    if (layer.device_compressor == nullptr) {
      auto created =
          DeviceLayerCompressor::Create(layer.spec.elements(), layer.slices, options.momentum);
      if (!created.ok()) return created.status();
      layer.device_compressor = *std::move(created);
    }
    return layer.device_compressor->CompressInto(job.device_gradient, job.stream, job.params,
                                                 payloads, stats, ready);
  }
  if (layer.compressor == nullptr) {
    auto created = LayerCompressor::Create(layer.spec.elements(), layer.slices, options.momentum);
    if (!created.ok()) return created.status();
    layer.compressor = std::make_unique<LayerCompressor>(*std::move(created));
  }
  return layer.compressor->CompressInto(job.gradient, job.params, payloads, stats, ready);
}

void Worker::Impl::AckLoop() {
  while (true) {
    PendingAck ack;
    {
      absl::MutexLock lock(&push_mu);
      push_mu.Await(absl::Condition(
          +[](Impl* impl) ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl->push_mu) {
            return !impl->ack_queue.empty() || (impl->stopping && impl->push_done);
          },
          this));
      if (ack_queue.empty()) return;
      ack = std::move(ack_queue.front());
      ack_queue.pop_front();
    }
    // The transport fails a call at its deadline (ServerClient's timeout).
    absl::Status status = ack.ticket.Wait();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - ack.sent);
    std::vector<absl::Status> results(ack.parts.size(), status);
    if (IsPeerLoss(status) && ack.server != nullptr) {
      // The server died with it: lost, like its updates since its last
      // checkpoint; the clock goes on once the server is back.
      {
        absl::MutexLock lock(&stats_mu);
        lost_pushes += ack.parts.size();
      }
      absl::MutexLock lock(&ack.server->mu);
      if (ack.server->generation == ack.generation) ack.server->recovery_requested = true;
      std::fill(results.begin(), results.end(), absl::OkStatus());
    } else if (status.ok()) {
      if (ack.batch) {
        auto entries =
            ServerClient::PushBatchResults(ack.ticket, static_cast<uint32_t>(ack.parts.size()));
        for (size_t i = 0; i < results.size(); ++i) {
          results[i] = entries.ok() ? (*entries)[i].status() : entries.status();
        }
      }
      absl::MutexLock lock(&stats_mu);
      for (const PushPart& part : ack.parts) {
        layer_stats[part.layer].push_ms += seconds * 1000;
        push_seconds += seconds;
      }
    }
    for (size_t i = 0; i < ack.parts.size(); ++i) ack.parts[i].group->PartDone(results[i]);
  }
}

}  // namespace leeway
