// Worker::Impl: the state behind worker.h, shared by worker.cc (set-up,
// Clock, statistics) and worker_io.cc (the push, ack and pull threads).
// Internal to the worker library.
#ifndef LEEWAY_WORKER_WORKER_IMPL_H_
#define LEEWAY_WORKER_WORKER_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/transport/transport.h"
#include "kernels/codec.h"
#include "worker/control_session.h"
#include "worker/data_plane.h"
#include "worker/device_layer_compressor.h"
#include "worker/layer_compressor.h"
#include "worker/push_batcher.h"
#include "worker/server_client.h"
#include "worker/ticket_group.h"
#include "worker/worker.h"

namespace leeway {

struct PullJob {
  uint32_t layer = 0;
  size_t chunk_index = 0;  // into LayerState::chunks
  uint32_t clock = 0;
  absl::Span<float> out;        // the whole layer, in host memory
  float* device_out = nullptr;  // or on the device, copied in `stream`'s order
  void* stream = nullptr;
  std::shared_ptr<TicketGroup> group;
  uint64_t sequence = 0;
};

// Earliest layer first, then first issued.
struct PullJobLater {
  bool operator()(const PullJob& a, const PullJob& b) const {
    if (a.layer != b.layer) return a.layer > b.layer;
    return a.sequence > b.sequence;
  }
};

// One server shard: its connection, which recovery replaces when the
// server is restarted (worker_recovery.cc), and its pull queue.
struct ServerLink {
  uint32_t rank = 0;
  absl::Mutex mu;
  // The connection in force; `generation` counts replacements.
  std::shared_ptr<ServerClient> client ABSL_GUARDED_BY(mu);
  uint32_t incarnation ABSL_GUARDED_BY(mu) = 0;  // the coordinator's
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
  uint32_t pushes ABSL_GUARDED_BY(mu) = 0;  // sent this generation for the current clock
  uint32_t view ABSL_GUARDED_BY(mu) = 0;    // the clock the server has for this worker
  bool recovery_requested ABSL_GUARDED_BY(mu) = false;
  absl::Status failed ABSL_GUARDED_BY(mu);  // recovery gave up: every call gets this
  std::priority_queue<PullJob, std::vector<PullJob>, PullJobLater> pulls ABSL_GUARDED_BY(mu);
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::thread thread;  // pulls, and recovery
};

struct ChunkState {
  uint32_t chunk = 0;
  uint64_t offset = 0;
  uint32_t elements = 0;
  ServerLink* server = nullptr;
  ChunkCopy cache;  // touched only by its server's pull thread
  // With pull_changes_only: where the last pull left a copy of `cache`
  // (its place in that pull's out buffer), kept equal to it; else null.
  // Also only its server's pull thread.
  const float* mirror = nullptr;
  // The last pull's reply payload (none before the first), which
  // TakePulls expects again. Only its server's pull thread.
  std::optional<uint64_t> last_reply_bytes;
};

// Per layer, what the window's pushes and pulls measured.
struct LayerWindowStats {
  double gradient_norm = 0;
  double residual_ratio = 0;
  uint64_t bytes_pushed = 0;
  uint64_t bytes_pulled = 0;
  double encode_ms = 0;
  double push_ms = 0;
  uint32_t pushes = 0;
};

struct LayerState {
  v1::LayerSpec spec;
  std::vector<ChunkState> chunks;
  std::vector<ChunkSlice> slices;  // the chunks, as the compressors cut the layer
  // Momentum and residual, where the layer's first push put them: host or
  // device memory (push thread only).
  std::unique_ptr<LayerCompressor> compressor;
  std::unique_ptr<DeviceLayerCompressor> device_compressor;
  CodecParams params;  // training thread only
};

struct PushJob {
  uint32_t layer = 0;
  absl::Span<const float> gradient;
  const float* device_gradient = nullptr;  // or on the device, in `stream`'s order
  void* stream = nullptr;
  uint32_t clock = 0;
  bool measure_residual = true;  // this clock's statistics may be reported
  CodecParams params;
  std::shared_ptr<TicketGroup> group;
};

// One message in flight: a chunk push, or a batch of them.
struct PendingAck {
  Ticket ticket;
  ServerLink* server = nullptr;
  uint64_t generation = 0;  // the server connection it went over
  std::vector<PushPart> parts;          // one per chunk push
  bool batch = false;                   // a PUSH_BATCH: the reply has each part's result
  std::shared_ptr<const void> payload;  // kept alive until the ticket is done
  absl::Time sent;
};

// A ticket that is done already, with `status` (worker_io.cc).
Ticket FailedTicket(absl::Status status);
// Why a push or pull (`call`) of `layer` with the device pointer `at`
// cannot be queued; OK when it can (worker_io.cc).
absl::Status DeviceCallRefusal(const char* call, uint32_t layer, size_t layers, const void* at);

// A call failed because its server's process is gone (the transport fails
// every operation on a lost peer with UNAVAILABLE): recovery's business.
inline bool IsPeerLoss(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable;
}

class Worker::Impl {
 public:
  explicit Impl(const WorkerOptions& options) : options(options) {}
  ~Impl();

  // worker.cc
  absl::Status Connect();
  absl::Status RegisterLayers(const std::vector<LayerDefinition>& layers);
  absl::Status Clock(const IterationInfo& info);
  absl::Status WaitAccounted(const Ticket& ticket, double* blocked_ms);
  void ApplyPlan(const v1::CompressionPlan& plan);
  void Report(const IterationInfo& info);
  // Whether a reporting window ends within `within` clocks, counting the
  // one now running (training thread).
  bool ReportDue(uint32_t within = 1) const;

  // worker_io.cc (pushes) and worker_pull.cc (pulls)
  void StartThreads();
  void StopThreads();
  Ticket Push(uint32_t layer, absl::Span<const float> gradient);
  Ticket Pull(uint32_t layer, absl::Span<float> out);
  Ticket PushDevice(uint32_t layer, const float* gradient, void* stream);
  Ticket PullDevice(uint32_t layer, float* out, void* stream);
  // Has the pushes queued so far sent without waiting in batches for more
  // (training thread; the push thread sends them).
  void FlushPushes();

  const WorkerOptions options;
  std::unique_ptr<DataPlane> data_plane;
  std::unique_ptr<ControlSession> session;
  std::vector<std::unique_ptr<ServerLink>> servers;
  std::vector<LayerState> layers;
  uint32_t clock = 0;
  uint64_t pull_sequence = 0;
  std::vector<Ticket> pending_pushes;  // this clock's
  std::optional<v1::CompressionPlan> next_plan;
  uint64_t plan_version = 0;

  // Iteration accounting (training thread).
  absl::Time iteration_start;
  double pull_wait_ms = 0;
  double push_wait_ms = 0;
  TransportStats transport_at_start;
  IterationStats last;
  // The reporting window (training thread).
  bool reported = false;  // the first window is one clock
  uint32_t window_iterations = 0;
  IterationStats window_sum;
  double window_loss = 0;
  double window_samples = 0;
  double window_backward_ms = 0;

  // Push and ack threads.
  absl::Mutex push_mu;
  std::deque<PushJob> push_queue ABSL_GUARDED_BY(push_mu);
  std::deque<PendingAck> ack_queue ABSL_GUARDED_BY(push_mu);
  bool stopping ABSL_GUARDED_BY(push_mu) = false;
  bool push_done ABSL_GUARDED_BY(push_mu) = false;  // the push thread has exited
  uint64_t push_jobs_queued ABSL_GUARDED_BY(push_mu) = 0;
  // Clock waits for the first this many jobs' pushes: once they have run,
  // open batches go at once, not when they are due.
  uint64_t flush_through ABSL_GUARDED_BY(push_mu) = 0;
  std::unique_ptr<PushBatcher> batcher;  // push thread only
  std::thread push_thread;
  std::thread ack_thread;

  // What the push and pull threads measured, per layer, this window.
  absl::Mutex stats_mu;
  std::vector<LayerWindowStats> layer_stats ABSL_GUARDED_BY(stats_mu);
  uint64_t dense_bytes ABSL_GUARDED_BY(stats_mu) = 0;
  uint64_t push_bytes ABSL_GUARDED_BY(stats_mu) = 0;
  double push_seconds ABSL_GUARDED_BY(stats_mu) = 0;  // summed push latencies
  uint64_t lost_pushes ABSL_GUARDED_BY(stats_mu) = 0;  // to servers that died

 private:
  void PushLoop();
  void AckLoop();
  void PullLoop(ServerLink* server);
  // The next pull of `server`'s queue and those after it that can share
  // its PULL_BATCH (pull_batch_sizer.h).
  std::vector<PullJob> TakePulls(ServerLink* server) ABSL_EXCLUSIVE_LOCKS_REQUIRED(server->mu);
  // Runs `jobs` (from TakePulls) on the server's pull thread: one PULL, or
  // one PULL_BATCH, recovering the server if it was lost.
  void RunPulls(ServerLink* server, const std::vector<PullJob>& jobs);
  // Copies a pulled chunk to where the job wants it and reports the part.
  void FinishPull(const PullJob& job, ChunkState& chunk, absl::Span<float> out, bool mirrored,
                  absl::Status status, uint64_t reply_bytes);
  void RunPush(PushJob job);
  // Sends one chunk push or batch on the push thread and queues its ack.
  void SendPush(ServerLink* server, PushPart part, uint32_t chunk, uint32_t clock,
                std::shared_ptr<const void> keep_alive, absl::Span<const uint8_t> payload);
  void SendBatch(PushBatch batch);
  // Counts `ack`'s pushes and sends them with `send` on `server`'s
  // connection (or fails them with the server's failure), then hands the
  // ack to the ack thread.
  void Dispatch(ServerLink* server, PendingAck ack,
                const std::function<Ticket(ServerClient&)>& send);
  // Queues a push or pull that passed its checks (training thread).
  Ticket QueuePush(PushJob job);
  Ticket QueuePull(PullJob prototype);
  // The layer's compression into `payloads`, on the side of memory the
  // job names (creating that side's compressor on the first push).
  absl::Status Compress(const PushJob& job, std::vector<std::vector<uint8_t>>* payloads,
                        CompressionStats* stats, const std::function<void(size_t)>& ready);

  // worker_recovery.cc: a lost server (UNAVAILABLE: its process died) is
  // waited for until the coordinator lists it alive again, reconnected,
  // rejoined at this worker's clock and offered the chunk values this
  // worker holds; pushes in flight to it are lost. Recovery runs on the
  // server's pull thread (which owns the chunk caches); the other threads
  // request it and wait.
  absl::Status SendClock(ServerLink* server, uint32_t clock);
  // From any thread but the server's own: asks for a recovery of
  // `generation` and waits for it (until `deadline`).
  absl::Status AwaitRecovery(ServerLink* server, uint64_t generation, absl::Time deadline);
  // On the pull thread: recovers from the loss of `generation` unless
  // that is done already.
  absl::Status Recover(ServerLink* server, uint64_t generation);
  // Until the coordinator lists the server alive under a new incarnation,
  // or under any once `same_from` has passed.
  absl::StatusOr<v1::Member> AwaitServer(ServerLink* server, uint32_t lost_incarnation,
                                         absl::Time same_from, absl::Time deadline);
  // Connects to `member` through the data plane's healthy transport.
  absl::StatusOr<std::shared_ptr<ServerClient>> ConnectServer(const v1::Member& member);
  absl::Status OfferChunks(ServerLink* server, ServerClient* client, absl::Time deadline);
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_WORKER_IMPL_H_
