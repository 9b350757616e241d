// DataPlane: a worker's UCX transport, and its replacement when it stalls.
//
// A shared-memory peer that dies inside a send into this process stops the
// process's shared-memory FIFO for every sender (UCX 1.13; README, data
// plane): the transport counts a stall (TransportStats::stalls) and every
// server it reaches over shared memory goes silent and is lost. A server
// restarts itself then (exit 75); a worker, which holds its training state
// in memory, instead makes a fresh transport (a new UCP worker, a new FIFO)
// and reconnects its servers through it (worker_recovery.cc).
//
// Guarantees: Healthy() never hands out a transport known to have stalled
// (unless no new one can be made: then an error); each stalled transport is
// replaced once, by the first caller that finds it stalled. Replaced transports stay alive until the DataPlane goes,
// since clients and tickets on them may still be in use on other threads
// (while stalled, each one's progress thread polls once a millisecond).
// With a ready file, each new transport's UCP worker address is written to
// it in the servers' ready-file format (port 0: a worker listens on none).
//
// Thread-safe.
#ifndef LEEWAY_WORKER_DATA_PLANE_H_
#define LEEWAY_WORKER_DATA_PLANE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/transport/transport.h"

namespace leeway {

class DataPlane {
 public:
  static absl::StatusOr<std::unique_ptr<DataPlane>> Create(const TransportOptions& options,
                                                           const std::string& ready_file);

  // The current transport, replaced first if it has stalled. An error only
  // if a new one could not be made (the stalled one stays current).
  absl::StatusOr<Transport*> Healthy();

  // Counters summed over every transport made so far.
  TransportStats stats() const;
  int replacements() const;

 private:
  DataPlane(const TransportOptions& options, std::string ready_file)
      : options_(options), ready_file_(std::move(ready_file)) {}
  // Makes a transport and publishes its address; mu_ held.
  absl::Status AddTransport() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const TransportOptions options_;
  const std::string ready_file_;
  mutable absl::Mutex mu_;
  // The last is current.
  std::vector<std::unique_ptr<Transport>> transports_ ABSL_GUARDED_BY(mu_);
};

}  // namespace leeway

#endif  // LEEWAY_WORKER_DATA_PLANE_H_
