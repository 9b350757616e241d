// The worker runtime: the client library a training loop uses to train
// through Leeway's parameter servers (DESIGN.md, "One iteration").
//
//   auto worker = Worker::Connect(options);          // registers, transport up
//   worker->RegisterLayers(layers);                  // shard map, servers, join
//   loop:
//     for l in forward order: pulls.push_back(worker->Pull(l, params[l]));
//     worker->Wait(pull of layer l) before computing with layer l;
//     backward: as soon as layer l's gradient is ready,
//       pushes.push_back(worker->Push(l, grad[l]));  // overlaps backward
//     worker->Clock(info);                           // waits for pushes, CLOCK
//
// Push compresses on the push thread (momentum correction and error
// feedback per layer, LayerCompressor; the codec and density of the
// current plan, switched at clock boundaries) and sends one payload per
// chunk to the chunk's server, each as soon as it is encoded. Pull brings every chunk of a layer up
// to the SSP bound through a per-chunk cache keyed by version (the server answers with a delta, the
// dense chunk, or "not modified") and copies it out; one pull thread per server, earliest layer
// first. Buffers handed to Push and Pull must stay valid until their ticket is done. Every wait has
// the options' deadline. Wait/Clock also account the time the caller was blocked (pull wait, push
// wait) for the iteration statistics that go to the coordinator after the first clock and then
// every `report_every` clocks.
//
// A server that dies is waited for (`server_recovery_timeout`) until the
// coordinator lists it alive again (restarted from its checkpoint); the
// worker reconnects, resumes at its own clock and goes on, the pushes in
// flight to the dead server lost with the updates since its checkpoint.
// Calls that need the server wait meanwhile; past the timeout they fail
// with the reason. A worker whose own shared-memory FIFO a dying peer
// stopped (every co-located server then goes silent) replaces its
// transport and reconnects to the same servers at once (data_plane.h).
//
// Gradients and parameters in GPU memory: PushDevice and PullDevice take
// device pointers and the CUDA stream (a cudaStream_t as void*) that
// orders them. A layer pushed from the device keeps its momentum and
// residual there (device_layer_compressor.h: compression runs on the GPU
// and only payloads cross to the host); a layer's first push decides
// where, and pushing it from the other side afterwards fails. Pulls copy
// each chunk to the device as it arrives. Without a CUDA build and a
// usable GPU both fail with FAILED_PRECONDITION.
//
// Threading: Push, Pull, Wait and Clock are called from one training
// thread.
#ifndef LEEWAY_WORKER_WORKER_H_
#define LEEWAY_WORKER_WORKER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/transport/ticket.h"
#include "types.pb.h"

namespace leeway {

struct WorkerOptions {
  std::string coordinator;  // host:port
  std::string token;
  uint64_t job_id = 1;  // must match the coordinator's and the servers'
  std::string host = "127.0.0.1";  // this worker's host, as others see it
  // How to reach servers: "address" (UCP worker address from the shard
  // map: shared memory with co-located servers) or "sockaddr" (TCP).
  std::string connect = "address";
  std::optional<uint32_t> rank;
  absl::Duration timeout = absl::Seconds(60);  // every data-plane wait
  absl::Duration register_timeout = absl::Seconds(60);
  absl::Duration server_recovery_timeout = absl::Seconds(120);
  // A server connection silent this long is lost (TransportOptions).
  absl::Duration peer_timeout = absl::Seconds(3);
  // If set, the worker's UCP worker address goes here (the servers' ready
  // file format, port 0) whenever it makes a transport (data_plane.h).
  std::string ready_file;
  float momentum = 0.9f;  // DGC momentum correction, compressed layers
  int report_every = 10;  // clocks between statistics reports
  int codec_threads = 1;
  // Pull(layer, out) may write only what changed since the previous pull
  // of that layer into the same buffer: for training loops whose
  // parameter buffers nothing but these pulls writes (a delta pull then
  // costs its changes, not a copy of the layer). Off: every pull writes
  // the whole layer.
  bool pull_changes_only = false;
  // Chunk pushes of at most a quarter of this many bytes (encoded) travel
  // to their server together, in PUSH_BATCH messages of up to this size
  // (worker/push_batcher.h); 0: every chunk push is a message of its own.
  size_t push_batch_bytes = 64 << 10;
  // Pulls queued for one server at one clock travel together in PULL_BATCH
  // messages of up to 32 chunks whose replies should take about this many
  // bytes (each chunk's last reply, or its fp32 size before the first)
  // and could take at most 16 MiB (the chunks as fp32); a chunk over
  // either limit goes alone. 0: every pull is a message of its own.
  size_t pull_batch_bytes = 4 << 20;
};

struct LayerDefinition {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> initial;  // the first worker to arrive sets them
  v1::OptimizerSpec optimizer;
};

// What the training loop tells Clock about the iteration it ends.
struct IterationInfo {
  double loss = 0;
  uint32_t samples = 0;
  double backward_ms = 0;
};

// One iteration as the runtime saw it.
struct IterationStats {
  uint32_t clock = 0;  // the clock the iteration ran at
  double iteration_ms = 0;
  double compute_ms = 0;    // iteration time not blocked on the runtime
  double pull_wait_ms = 0;  // blocked on pulls
  double push_wait_ms = 0;  // blocked on pushes: communication not hidden
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages = 0;     // data-plane messages sent and received
  uint64_t dense_bytes = 0;  // what the pushes would have been as fp32
  uint64_t push_bytes = 0;   // what they were
};

class Worker {
 public:
  static absl::StatusOr<std::unique_ptr<Worker>> Connect(const WorkerOptions& options);
  ~Worker();

  uint32_t rank() const;
  int32_t staleness() const;  // -1: asynchronous
  uint32_t expected_workers() const;
  uint32_t clock() const;

  // Declares the layers (ids are their positions), gets the shard map,
  // connects to the servers, joins their clock sets and offers initial
  // values. Once.
  absl::Status RegisterLayers(const std::vector<LayerDefinition>& layers);

  Ticket Push(uint32_t layer, absl::Span<const float> gradient);
  Ticket Pull(uint32_t layer, absl::Span<float> out);
  // The same with device pointers to the layer's elements. The push reads
  // `gradient` in `stream`'s order (after the work queued there that wrote
  // it); the pull's copies go in `stream`'s order and are done when its
  // ticket is. Buffers stay valid until the tickets are done.
  Ticket PushDevice(uint32_t layer, const float* gradient, void* stream);
  Ticket PullDevice(uint32_t layer, float* out, void* stream);
  // Waits for a Pull's ticket (the time counts as pull wait); a Push's
  // tickets are waited for by Clock, which counts that as push wait.
  absl::Status Wait(const Ticket& ticket);

  // Ends the iteration: waits for its pushes, sends CLOCK to every server,
  // switches to a newer plan when it takes effect, reports statistics.
  // Waits while the job is paused.
  absl::Status Clock(const IterationInfo& info);
  const IterationStats& last_iteration() const;

  // The coordinator asked the job to stop.
  bool stop_requested() const;
  // The codec plan in force, as "layer:codec[:density]" text for logs.
  std::string PlanSummary() const;

  class Impl;

 private:
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_WORKER_H_
