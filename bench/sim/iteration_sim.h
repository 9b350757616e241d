// A discrete-event model of data-parallel training through Leeway's
// parameter servers, for projecting the communication study to sizes this
// machine cannot run. Per worker and clock it plays out what the runtime
// does: pull every chunk from its server in forward order (a server answers
// once the pushes SSP requires of all workers are applied, reusing a reply
// for pulls that name the same versions), run each tensor's forward as its
// parameters arrive (or after all of them, without pipelining), run
// backward in reverse, encode and push each tensor as its backward ends (or
// after the whole backward), and end the clock once its pushes are applied.
// Each NIC direction is a FIFO pipe with a rate, so a server's NIC
// serializes the incast of many workers (a message takes the later of its
// two pipes), or the links are shared among connections as TCP does
// (Cluster::fair_links, FairLinks: max-min, each message's share weighted
// by a seeded draw as unequal as measured flows are, Cluster::unfairness);
// encode, apply and serving a pull are serial per process, and where the
// processes share a machine of few cores (the study's VM) they time-share
// those cores (SharedCores). Deterministic for a seed. The arithmetic is
// unit-tested on cases worked by hand (iteration_sim_test.cc).
#ifndef LEEWAY_BENCH_SIM_ITERATION_SIM_H_
#define LEEWAY_BENCH_SIM_ITERATION_SIM_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/sim/fair_links.h"

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
  // CPU cores all processes share (encodes, applies, pull reads queue for
  // them, first come first served); 0: every process has CPU of its own.
  int cores = 0;
  // How messages share the links: false, each NIC direction is a FIFO pipe
  // and a message takes the later of its two; true, the connections (one
  // per sender and receiver, its messages in order) share every link
  // max-min fairly as TCP flows do, each at most `flow_bytes_per_s` (0: no
  // cap; one UCX TCP endpoint gets less than several together).
  bool fair_links = false;
  double flow_bytes_per_s = 0;
  // Fair links: each message's share, while it moves, is weighted by a
  // factor uniform in 1 +- unfairness.SpreadAt(its bytes), seeded by the
  // job, as real TCP flows into one link finish apart even when they
  // start together (bench/netlab/flow_spread.sh measures how far).
  Unfairness unfairness;
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
  double read_s_per_element = 0;    // server CPU per pull served, per element of the chunk
  // A later pull of the same chunk and clock (the server reuses the delta
  // it built for the first one: under BSP every worker names the same
  // versions).
  double reread_s_per_element = 0;
  // The first pull's read is a publication made ahead instead: once every
  // worker's push of clock c to a chunk is applied, its server spends
  // read_s_per_element on the chunk's publication for clock c + 1, and
  // that clock's pulls of the chunk wait for it, if still running, and
  // cost reread_s_per_element (top-k pulls; servers since 2026-12-07).
  // The publications queue for CPU apart from the server's applies and
  // reads (its apply pool runs them when no push or read waits).
  bool publish_on_push = false;
  // Pulls read a clock's publication (top-k pulls), made by the clock's
  // first pull unless publish_on_push: the later pulls of that clock reuse
  // it. Otherwise they read the parameters, and a reply is reused only by
  // pulls naming the same versions of an unchanged chunk (Chunk::Read), so
  // workers apart under SSP each pay the read.
  bool published_pulls = false;
  // The first `dense_clocks` clocks run on a dense plan instead: fp32 both
  // ways at the costs of `dense` (the adaptive controller's first plan
  // waits for a measurement of the link). Its byte and cost fields alone.
  int dense_clocks = 0;
  struct Costs {
    double push_bytes_per_element = 4, pull_bytes_per_element = 4;
    double encode_s_per_element = 0, apply_s_per_element = 0, read_s_per_element = 0,
           reread_s_per_element = 0;
  } dense;
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
  // p99 over every applied push of (the most clocks any worker has
  // completed) - (the push's clock), as the servers measure staleness.
  double staleness_p99 = 0;
  // Pulls that paid read_s_per_element (built their reply), every clock.
  int64_t replies_built = 0;
};

absl::StatusOr<Result> Simulate(const std::vector<Tensor>& model, const Cluster& cluster,
                                const Job& job);

// The run of seeds job.seed, job.seed + 1, ... (`seeds` of them) with the
// median samples/s (the lower middle one for an even count), as the study
// reports medians of its seeds.
absl::StatusOr<Result> SimulateMedian(const std::vector<Tensor>& model, const Cluster& cluster,
                                      const Job& job, int seeds);

}  // namespace sim
}  // namespace leeway

#endif  // LEEWAY_BENCH_SIM_ITERATION_SIM_H_
