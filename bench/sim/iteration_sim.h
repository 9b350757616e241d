// A discrete-event model of data-parallel training through Leeway's
// parameter servers, for projecting the communication study to sizes this
// machine cannot run. Per worker and clock it plays out what the runtime
// does: pull every chunk from its server in forward order (a server answers
// once the pushes SSP requires of all workers are applied), run each tensor's forward as its parameters
// arrive (or after all of them, without pipelining), run backward in
// reverse, encode and push each tensor as its backward ends (or after the
// whole backward), and end the clock once its pushes are applied. Each NIC
// direction is a FIFO pipe with a rate, so a server's NIC serializes the
// incast of many workers (a message takes the later of its two pipes); encode and apply are serial per
// process. Deterministic for a seed. The arithmetic is unit-tested on cases
// worked by hand (iteration_sim_test.cc).
#ifndef LEEWAY_BENCH_SIM_ITERATION_SIM_H_
#define LEEWAY_BENCH_SIM_ITERATION_SIM_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"

namespace leeway {
namespace sim {

struct Tensor {
  uint64_t elements = 0;
  double compute_share = 0;  // of the iteration's GPU time; the model's sum to 1
};

struct Cluster {
  int workers = 1;
  int servers = 1;
  double worker_bytes_per_s = 125e6;  // each NIC, each direction
  double server_bytes_per_s = 125e6;
  double latency_s = 0;               // one way, every message
  double header_bytes = 64;           // on every message, requests too
  double chunk_bytes = 4 << 20;       // a tensor's largest piece (dense fp32)
  // Pull requests in flight per worker and server: 0, all of a clock's at
  // once (each NIC then serves whole requests first come, first served, as
  // the shaped links' FIFO queues do); 1, one at a time as the runtime's
  // pull threads send them, which keeps equal workers in lock-step.
  int pull_window = 0;
};

struct Job {
  double gpu_s = 0.1;          // forward + backward per iteration; forward a third
  double straggler = 1;        // worker 0's GPU time factor
  double jitter = 0;           // each iteration's factor uniform in 1 +- jitter
  uint64_t seed = 1;
  int64_t staleness = 0;       // 0: BSP; < 0: asynchronous
  bool overlap = true;         // pipelining (see the header comment)
  double push_bytes_per_element = 4;
  double pull_bytes_per_element = 4;
  double encode_s_per_element = 0;  // worker CPU, per element of the tensor
  double apply_s_per_element = 0;   // server CPU, per element of the chunk
  int samples_per_iteration = 32;   // per worker
  int clocks = 12;
  int warmup_clocks = 2;            // not measured
  // Tests: overrides gpu_s x straggler x jitter for (worker, clock).
  std::function<double(int, int)> gpu_time;
};

struct Result {
  double seconds_per_clock = 0;  // mean over workers of measured wall / clocks
  double samples_per_s = 0;      // all workers
  double comm_share = 0;         // (wall - GPU time) / wall, mean over workers
  double bytes_per_iteration = 0;  // per worker, both directions, headers included
};

absl::StatusOr<Result> Simulate(const std::vector<Tensor>& model, const Cluster& cluster,
                                const Job& job);

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_ITERATION_SIM_H_
