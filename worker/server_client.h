// A worker's connection to one server shard over the data plane: join the
// shard's clock set, send initial values, push encoded gradients, announce
// clocks, and pull parameters (answering only what changed since the
// version it holds). The message formats are the server's
// (server/data_service.h). Every call has a deadline; errors the server
// sends back arrive as the Status it sent.
//
// Thread-safe (the transport is); a worker typically keeps several pushes
// in flight with PushAsync and waits for them before its CLOCK.
#ifndef LEEWAY_WORKER_SERVER_CLIENT_H_
#define LEEWAY_WORKER_SERVER_CLIENT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/transport/transport.h"

namespace leeway {

// What a worker holds of one chunk.
struct ChunkCopy {
  std::vector<float> values;
  uint64_t version = ~uint64_t{0};  // kNoVersion: nothing yet
};

enum class PullForm { kNotModified, kDelta, kDense };

class ServerClient {
 public:
  ServerClient(Transport* transport, PeerId server, absl::Duration timeout);

  // Joins; returns the clock this worker starts at. `resume_at` > 0 names
  // the clock the worker is at when it rejoins a restarted server (the
  // server resumes it there: ssp_tracker.h).
  absl::StatusOr<uint32_t> Join(uint32_t resume_at = 0);
  // Sends initial values; true if the server took them (first writer).
  absl::StatusOr<bool> Initialize(uint32_t layer, uint32_t chunk,
                                  absl::Span<const float> values);
  // The same, retrying NOT_FOUND (a server that follows a coordinator
  // declares its chunks once it has the shard map) until `until`.
  absl::StatusOr<bool> InitializeWhenDeclared(uint32_t layer, uint32_t chunk,
                                              absl::Span<const float> values, absl::Time until);
  // One push; `payload` (a codec payload) must stay valid until done.
  Ticket PushAsync(uint32_t layer, uint32_t chunk, uint32_t clock,
                   absl::Span<const uint8_t> payload);
  // Several pushes stamped `clock` in one message: `batch` holds `entries`
  // entries (core/transport/push_batch.h) and must stay valid until done.
  // The ticket fails when the whole batch was refused; PushBatchResults
  // then reads each entry's result from its reply.
  Ticket PushBatchAsync(uint32_t clock, uint32_t entries, absl::Span<const uint8_t> batch);
  // Each entry's version or refusal, from a batch's successful ticket.
  static absl::StatusOr<std::vector<absl::StatusOr<uint64_t>>> PushBatchResults(const Ticket& done,
                                                                                uint32_t entries);
  // CLOCK(clock, pushes sent to this server for clock - 1).
  absl::Status Clock(uint32_t clock, uint32_t pushes);
  // Brings `copy` (of `elements` elements) up to date for a worker at
  // `clock`; waits while SSP says so. `reply_bytes`, when given, receives
  // the size of the reply's payload. A `mirror` of `elements` elements,
  // when given, receives the same changes as the copy: only the changed
  // elements for a delta, all of them for a dense reply, none when not
  // modified (so a mirror equal to the copy before stays equal to it); on
  // an error neither changes.
  absl::StatusOr<PullForm> Pull(uint32_t layer, uint32_t chunk, uint32_t clock,
                                uint32_t elements, ChunkCopy* copy,
                                uint64_t* reply_bytes = nullptr,
                                absl::Span<float> mirror = {});

  // Several pulls at `clock` in one round trip (PULL_BATCH), each as Pull
  // would do it: the whole batch fails (nothing changed) or each request
  // gets its form or error.
  struct PullRequest {
    uint32_t layer = 0;
    uint32_t chunk = 0;
    uint32_t elements = 0;
    ChunkCopy* copy = nullptr;
    uint64_t* reply_bytes = nullptr;  // optional
    absl::Span<float> mirror;         // optional
  };
  absl::StatusOr<std::vector<absl::StatusOr<PullForm>>> PullBatch(
      uint32_t clock, absl::Span<const PullRequest> requests);

  // Waits for a ticket (driving progress on this thread).
  absl::Status Wait(const Ticket& ticket);

  // The transport the connection runs on.
  Transport* transport() const { return transport_; }

 private:
  absl::Time Deadline() const { return absl::Now() + timeout_; }

  Transport* const transport_;
  const PeerId server_;
  const absl::Duration timeout_;
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_SERVER_CLIENT_H_
