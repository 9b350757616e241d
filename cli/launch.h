// `leeway launch`: a whole local cluster as child processes - the
// coordinator, S servers and W workers training a model - with a live
// progress display, a summary at the end (table, or one JSON object with
// -o json) and a report.json in the run directory; optionally an SVG plot
// of loss and test accuracy over time.
//
// Guarantees: every child is stopped when the launch ends, however it ends
// (all workers done, a child dying, Ctrl-C or SIGTERM): the rest get
// SIGTERM, then SIGKILL after a grace period, and children of a killed
// launcher get SIGTERM from the kernel. A child that dies is named, with
// its last log lines. Exit codes: 0 done, 1 a child failed, 2 bad options,
// 130 interrupted.
#ifndef LEEWAY_CLI_LAUNCH_H_
#define LEEWAY_CLI_LAUNCH_H_

#include <cstdint>
#include <string>

namespace leeway {

struct LaunchOptions {
  int servers = 2;
  int workers = 4;
  std::string staleness = "2";          // a count, or "async"
  std::string compression = "adaptive";  // none | adaptive | fixed:<codec>[:<density>]
  std::string model = "mlp";
  // Communication studies (leeway-worker --profile): the model's tensors
  // with emulated compute instead of the MLP; no data needed.
  std::string profile;  // gpt2-small | bert-base | resnet50; empty: none
  double gpu_ms = 100;  // emulated forward + backward per iteration
  double straggler = 1;  // the last worker's GPU time factor
  double jitter = 0;     // every worker's per-iteration +- fraction
  double pull_density = 0;  // leeway-server --pull_density
  bool overlap = true;   // false: the no-pipelining ablation (leeway-worker --overlap)
  int push_batch_kib = 64;    // leeway-worker --push_batch_kib (0: no batched pushes)
  int pull_batch_kib = 4096;  // leeway-worker --pull_batch_kib (0: no batched pulls)
  // Where workers keep gradients and parameters: host, or device (GPU
  // memory: the MLP on cuBLAS, compression on the GPU; leeway-worker
  // --gradients).
  std::string gradients = "host";
  std::string hidden = "256";
  int clocks = 1000;
  int batch = 32;
  float learning_rate = 0.1f;
  std::string transport = "sm";  // sm (shared memory) or tcp
  // Run each role in bench/netlab/netlab.sh's namespaces with this prefix
  // (TCP over their shaped links; cli/placement.h); empty: loopback.
  std::string netns;
  std::string data_dir = "data/mnist";
  std::string run_dir;  // empty: a new directory under /tmp
  std::string plot;     // SVG file; empty: none
  std::string bin_dir;  // empty: next to this binary
  bool json = false;
  uint64_t seed = 1;
  int log_every = 20;
  int warmup_clocks = 0;  // leeway-worker --warmup_clocks
  // Liveness: the coordinator's heartbeat timeout and the data plane's
  // peer timeout. 0: the binaries' defaults (5 s, 3 s), or 30 s with
  // --netns, whose saturated shaped links delay heartbeats and keepalives
  // behind bulk transfers by seconds.
  int peer_timeout_ms = 0;
  int plan_window = 50;
};

int Launch(const LaunchOptions& options);

}  // namespace leeway

#endif  // LEEWAY_CLI_LAUNCH_H_
