// The worker's pulls: one thread per server takes its queue's next pull,
// with those after it that share a PULL_BATCH, and brings the chunk caches
// and the caller's buffers up to date.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/device_memory.h"
#include "worker/pull_batch_sizer.h"
#include "worker/worker_impl.h"

namespace leeway {

Ticket Worker::Impl::Pull(uint32_t layer, absl::Span<float> out) {
  if (layer >= layers.size() || out.size() != layers[layer].spec.elements()) {
    return FailedTicket(absl::InvalidArgumentError(absl::StrCat(
        "pull of layer ", layer, " into ", out.size(), " elements: no such layer or size")));
  }
  PullJob job;
  job.layer = layer;
  job.out = out;
  return QueuePull(std::move(job));
}

Ticket Worker::Impl::PullDevice(uint32_t layer, float* out, void* stream) {
  absl::Status refused = DeviceCallRefusal("a pull", layer, layers.size(), out);
  if (!refused.ok()) return FailedTicket(std::move(refused));
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
    std::vector<PullJob> jobs;
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
      if (!recover) jobs = TakePulls(server);
    }
    if (recover) {
      Recover(server, lost_generation).IgnoreError();  // kept in server->failed
      continue;
    }
    RunPulls(server, jobs);
  }
}

std::vector<PullJob> Worker::Impl::TakePulls(ServerLink* server) {
  // The next pull, and those after it (in order) that fit in one batch.
  std::vector<PullJob> jobs;
  PullBatchSizer sizer(options.pull_batch_bytes);
  while (!server->pulls.empty()) {
    const PullJob& next = server->pulls.top();
    const ChunkState& chunk = layers[next.layer].chunks[next.chunk_index];
    if (!sizer.Take(next.clock, chunk.elements, chunk.last_reply_bytes)) break;
    jobs.push_back(next);
    server->pulls.pop();
  }
  return jobs;
}

void Worker::Impl::RunPulls(ServerLink* server, const std::vector<PullJob>& jobs) {
  // Where each chunk goes: the buffer the last pull left equal to the
  // cache gets the changes alone.
  struct Target {
    ChunkState* chunk;
    absl::Span<float> out;
    bool mirrored;
    uint64_t reply_bytes = 0;
  };
  std::vector<Target> targets;
  std::vector<ServerClient::PullRequest> requests;
  for (const PullJob& job : jobs) {
    ChunkState& chunk = layers[job.layer].chunks[job.chunk_index];
    const bool device = job.device_out != nullptr;
    const absl::Span<float> out =
        device ? absl::Span<float>() : job.out.subspan(chunk.offset, chunk.elements);
    const bool mirrored = !device && options.pull_changes_only && chunk.mirror == out.data();
    chunk.mirror = nullptr;
    targets.push_back(Target{&chunk, out, mirrored});
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    Target& t = targets[i];
    requests.push_back({jobs[i].layer, t.chunk->chunk, t.chunk->elements, &t.chunk->cache,
                        &t.reply_bytes, t.mirrored ? t.out : absl::Span<float>()});
  }
  std::vector<absl::StatusOr<PullForm>> forms;
  while (true) {
    std::shared_ptr<ServerClient> client;
    uint64_t generation = 0;
    {
      absl::MutexLock lock(&server->mu);
      if (!server->failed.ok()) {
        forms.assign(jobs.size(), server->failed);
        break;
      }
      client = server->client;
      generation = server->generation;
    }
    absl::Status status;
    if (jobs.size() == 1) {
      forms = {client->Pull(jobs[0].layer, requests[0].chunk, jobs[0].clock, requests[0].elements,
                            requests[0].copy, requests[0].reply_bytes, requests[0].mirror)};
      status = forms[0].status();
    } else {
      auto batch = client->PullBatch(jobs[0].clock, requests);
      status = batch.status();
      forms = batch.ok() ? *std::move(batch)
                         : std::vector<absl::StatusOr<PullForm>>(jobs.size(), batch.status());
    }
    if (!IsPeerLoss(status)) break;
    absl::Status recovered = Recover(server, generation);
    if (!recovered.ok()) {
      forms.assign(jobs.size(), recovered);
      break;
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    FinishPull(jobs[i], *targets[i].chunk, targets[i].out, targets[i].mirrored, forms[i].status(),
               targets[i].reply_bytes);
  }
}

void Worker::Impl::FinishPull(const PullJob& job, ChunkState& chunk, absl::Span<float> out,
                              bool mirrored, absl::Status status, uint64_t reply_bytes) {
  if (status.ok()) {
    if (job.device_out != nullptr) {
      status = CopyToDevice(job.device_out + chunk.offset, chunk.cache.values.data(),
                            chunk.elements * sizeof(float), job.stream);
    } else {
      if (!mirrored) {
        std::memcpy(out.data(), chunk.cache.values.data(), chunk.elements * sizeof(float));
      }
      if (options.pull_changes_only) chunk.mirror = out.data();
    }
    chunk.last_reply_bytes = reply_bytes;
    absl::MutexLock lock(&stats_mu);
    layer_stats[job.layer].bytes_pulled += reply_bytes;
  }
  job.group->PartDone(status);
}

}  // namespace leeway
