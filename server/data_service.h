// The server's data plane: turns PUSH, PULL and CLOCK messages from the
// transport into ServerCore calls, applies pushes on the apply pool (one
// chunk's pushes in arrival order, different chunks in parallel), answers
// pulls when SSP allows, and expires pulls parked too long.
//
// Messages (header fields; payloads are codec payloads, kernels/codec.h):
//   CLOCK + kFlagInitial   join: the reply's clock is where the worker starts
//   CLOCK(clock, element_count = pushes sent for clock - 1)
//   PUSH(layer, chunk, clock = stamp)                 reply: version
//   PUSH_BATCH(clock = stamp, element_count = entries)
//                          several pushes (core/transport/push_batch.h),
//                          each applied and counted as a PUSH of its own;
//                          reply: each entry's version or refusal
//   PUSH + kFlagInitial    initial values (first writer wins; standalone
//                          servers declare the chunk from it, with the
//                          default optimizer)
//   PULL(layer, chunk, clock, version = held or kNoVersion)
//                          reply PULL_REPLY: version, codec, payload (empty:
//                          not modified; topk pairs: delta; none: dense)
//   PULL_BATCH(clock, element_count = entries)
//                          several pulls (core/transport/pull_batch.h),
//                          answered together once SSP allows the clock;
//                          each entry as a PULL_REPLY would, or its refusal
// Every refusal is an ERROR reply carrying the Status (and a counter in
// ServerCore); nothing is applied. Handlers never block the progress
// thread. With top-k pulls a chunk publishes for the next clock in the
// background as soon as every live worker's push of a clock to it is
// applied (PublishWhenPushed), and the first CLOCK of a clock starts that
// clock's publications not made yet (PublishAhead), so that its pulls
// find them made. A lost peer's worker leaves the SSP clock set when
// `leave_on_peer_loss` (standalone; with a coordinator it decides).
#ifndef LEEWAY_SERVER_DATA_SERVICE_H_
#define LEEWAY_SERVER_DATA_SERVICE_H_

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "core/transport/transport.h"
#include "server/apply_pool.h"
#include "server/server_core.h"

namespace leeway {

struct DataServiceOptions {
  int apply_threads = 0;  // 0: one per hardware thread
  // A pull parked longer than this is answered DEADLINE_EXCEEDED.
  absl::Duration max_pull_wait = absl::Seconds(120);
  bool leave_on_peer_loss = true;
  bool declare_on_initial_push = true;
  OptimizerConfig default_optimizer;
};

class DataService {
 public:
  DataService(ServerCore* core, Transport* transport,
              const DataServiceOptions& options);
  // Stops taking messages, runs the applies already accepted, stops.
  ~DataService();

  // Installs the handlers.
  void Start();
  // Waits until every accepted push has been applied.
  void Drain() { pool_.Drain(); }

 private:
  struct PendingBatch;
  void OnPush(Message m);
  void OnPushBatch(Message m);
  void OnPull(Message m);
  void OnPullBatch(Message m);
  void OnClock(Message m);
  void OnPeerLost(PeerId peer);
  void Fail(const Message& m, const absl::Status& status);
  void ApplyPush(const Message& m);
  void Initialize(const Message& m);
  void RememberPeer(PeerId peer, uint32_t rank);
  // With top-k pulls: publishes the chunks for `clock` on the apply pool,
  // last chunk first, one task at a time, until it meets a chunk the
  // clock's pulls (which read first chunk first) published already.
  void PublishAhead(uint32_t clock);
  void PublishFrom(std::shared_ptr<const std::vector<Chunk*>> chunks, size_t end, uint32_t clock);
  // After a push from `rank` stamped `clock` was applied to (layer, chunk):
  // with top-k pulls, once every live worker's has, queues the chunk's
  // publication for clock + 1 behind it (during the workers' backward
  // passes, while the server has time, instead of on the next pulls' path).
  void PublishWhenPushed(uint32_t rank, uint32_t layer, uint32_t chunk, uint32_t clock);

  ServerCore* const core_;
  Transport* const transport_;
  const DataServiceOptions options_;
  ApplyPool pool_;
  std::atomic<uint64_t> next_read_key_{0};
  std::atomic<uint32_t> publishing_clock_{0};  // the newest clock PublishAhead began

  absl::Mutex peers_mu_;
  absl::flat_hash_map<PeerId, uint32_t> rank_of_peer_ ABSL_GUARDED_BY(peers_mu_);

  absl::Notification stop_;
  std::thread expiry_;
};

}  // namespace leeway

#endif  // LEEWAY_SERVER_DATA_SERVICE_H_
