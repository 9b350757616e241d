// The worker's data-plane threads: compression and pushes (push thread),
// push acknowledgements (ack thread), and pulls (one thread per server).
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/common/logging.h"
#include "core/common/thread_name.h"
#include "kernels/codec_cuda.h"
#include "kernels/device_memory.h"
#include "worker/worker_impl.h"

namespace leeway {

void Worker::Impl::StartThreads() {
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

Ticket Failed(absl::Status status) {
  auto group = TicketGroup::Create(1);
  group->PartDone(std::move(status));
  return group->ticket();
}

// Why a push or pull (`call`) of `layer` with the device pointer `at`
// cannot be queued; OK when it can.
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

}  // namespace

Ticket Worker::Impl::Push(uint32_t layer, absl::Span<const float> gradient) {
  if (layer >= layers.size()) {
    return Failed(absl::InvalidArgumentError(absl::StrCat("no layer ", layer)));
  }
  PushJob job;
  job.layer = layer;
  job.gradient = gradient;
  return QueuePush(std::move(job));
}

Ticket Worker::Impl::PushDevice(uint32_t layer, const float* gradient, void* stream) {
  absl::Status refused = DeviceCallRefusal("a push", layer, layers.size(), gradient);
  if (!refused.ok()) return Failed(std::move(refused));
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
  return ticket;
}

void Worker::Impl::PushLoop() {
  while (true) {
    PushJob job;
    {
      absl::MutexLock lock(&push_mu);
      push_mu.Await(absl::Condition(
          +[](Impl* impl) ABSL_EXCLUSIVE_LOCKS_REQUIRED(impl->push_mu) {
            return impl->stopping || !impl->push_queue.empty();
          },
          this));
      if (push_queue.empty()) return;
      job = std::move(push_queue.front());
      push_queue.pop_front();
    }
    RunPush(std::move(job));
  }
}

void Worker::Impl::RunPush(PushJob job) {
  LayerState& layer = layers[job.layer];
  // Seeds differ per worker, layer and clock (stochastic rounding, randomk).
  job.params.seed = (uint64_t{session->registration().rank()} << 40) ^
                    (uint64_t{job.layer} << 24) ^ job.clock;
  auto payloads = std::make_shared<std::vector<std::vector<uint8_t>>>();
  size_t sent = 0;
  // Each chunk goes out as soon as it is encoded, while the next encodes.
  auto send = [&](size_t i) {
    ChunkState& chunk = layer.chunks[i];
    const std::vector<uint8_t>& payload = (*payloads)[i];
    PendingAck ack;
    ack.sent = absl::Now();
    ++sent;
    {
      // Counted and sent on one connection generation (recovery resets it).
      ServerLink* server = chunk.server;
      absl::MutexLock lock(&server->mu);
      if (!server->failed.ok()) {
        job.group->PartDone(server->failed);
        return;
      }
      ++server->pushes;
      ack.ticket = server->client->PushAsync(job.layer, chunk.chunk, job.clock, payload);
      ack.server = server;
      ack.generation = server->generation;
    }
    ack.group = job.group;
    ack.payloads = payloads;
    ack.layer = job.layer;
    ack.bytes = payload.size();
    absl::MutexLock lock(&push_mu);
    ack_queue.push_back(std::move(ack));
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
            return !impl->ack_queue.empty() ||
                   (impl->stopping && impl->push_queue.empty());
          },
          this));
      if (ack_queue.empty()) return;
      ack = std::move(ack_queue.front());
      ack_queue.pop_front();
    }
    // The transport fails a call at its deadline (ServerClient's timeout).
    absl::Status status = ack.ticket.Wait();
    const double seconds = absl::ToDoubleSeconds(absl::Now() - ack.sent);
    if (IsPeerLoss(status)) {
      // The server died with it: lost, like its updates since its last
      // checkpoint; the clock goes on once the server is back.
      {
        absl::MutexLock lock(&stats_mu);
        ++lost_pushes;
      }
      absl::MutexLock lock(&ack.server->mu);
      if (ack.server->generation == ack.generation) ack.server->recovery_requested = true;
      status = absl::OkStatus();
    } else if (status.ok()) {
      absl::MutexLock lock(&stats_mu);
      layer_stats[ack.layer].push_ms += seconds * 1000;
      push_seconds += seconds;
    }
    ack.group->PartDone(status);
  }
}

Ticket Worker::Impl::Pull(uint32_t layer, absl::Span<float> out) {
  if (layer >= layers.size() || out.size() != layers[layer].spec.elements()) {
    return Failed(absl::InvalidArgumentError(absl::StrCat(
        "pull of layer ", layer, " into ", out.size(), " elements: no such layer or size")));
  }
  PullJob job;
  job.layer = layer;
  job.out = out;
  return QueuePull(std::move(job));
}

Ticket Worker::Impl::PullDevice(uint32_t layer, float* out, void* stream) {
  absl::Status refused = DeviceCallRefusal("a pull", layer, layers.size(), out);
  if (!refused.ok()) return Failed(std::move(refused));
  PullJob job;
  job.layer = layer;
  job.device_out = out;
  job.stream = stream;
  return QueuePull(std::move(job));
}

Ticket Worker::Impl::QueuePull(PullJob prototype) {
  LayerState& state = layers[prototype.layer];
  auto group = TicketGroup::Create(static_cast<int>(state.chunks.size()));
  for (size_t i = 0; i < state.chunks.size(); ++i) {
    PullJob job = prototype;
    job.chunk_index = i;
    job.clock = clock;
    job.group = group;
    job.sequence = pull_sequence++;
    ServerLink* server = state.chunks[i].server;
    absl::MutexLock lock(&server->mu);
    server->pulls.push(std::move(job));
  }
  return group->ticket();
}

void Worker::Impl::PullLoop(ServerLink* server) {
  while (true) {
    PullJob job;
    uint64_t lost_generation = 0;
    bool recover = false;
    {
      absl::MutexLock lock(&server->mu);
      server->mu.Await(absl::Condition(
          +[](ServerLink* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu) {
            return s->stopping || !s->pulls.empty() || s->recovery_requested;
          },
          server));
      if (server->stopping && server->pulls.empty()) return;
      recover = server->recovery_requested;
      lost_generation = server->generation;
      if (!recover) {
        job = server->pulls.top();
        server->pulls.pop();
      }
    }
    if (recover) {
      Recover(server, lost_generation).IgnoreError();  // kept in server->failed
      continue;
    }
    ChunkState& chunk = layers[job.layer].chunks[job.chunk_index];
    const bool device = job.device_out != nullptr;
    const absl::Span<float> out =
        device ? absl::Span<float>() : job.out.subspan(chunk.offset, chunk.elements);
    // The buffer the last pull left equal to the cache gets the changes alone.
    const bool mirrored = !device && options.pull_changes_only && chunk.mirror == out.data();
    chunk.mirror = nullptr;
    uint64_t reply_bytes = 0;
    absl::StatusOr<PullForm> form;
    while (true) {
      std::shared_ptr<ServerClient> client;
      uint64_t generation = 0;
      {
        absl::MutexLock lock(&server->mu);
        if (!server->failed.ok()) {
          form = server->failed;
          break;
        }
        client = server->client;
        generation = server->generation;
      }
      form = client->Pull(job.layer, chunk.chunk, job.clock, chunk.elements, &chunk.cache,
                          &reply_bytes, mirrored ? out : absl::Span<float>());
      if (!IsPeerLoss(form.status())) break;
      absl::Status recovered = Recover(server, generation);
      if (!recovered.ok()) {
        form = recovered;
        break;
      }
    }
    absl::Status status = form.status();
    if (form.ok()) {
      if (device) {
        status = CopyToDevice(job.device_out + chunk.offset, chunk.cache.values.data(),
                              chunk.elements * sizeof(float), job.stream);
      } else {
        if (!mirrored) {
          std::memcpy(out.data(), chunk.cache.values.data(), chunk.elements * sizeof(float));
        }
        if (options.pull_changes_only) chunk.mirror = out.data();
      }
      absl::MutexLock lock(&stats_mu);
      layer_stats[job.layer].bytes_pulled += reply_bytes;
    }
    job.group->PartDone(status);
  }
}

}  // namespace leeway
