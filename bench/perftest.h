// Runs ucx_perftest (Debian's ucx-utils) as a pair of processes on loopback
// and parses its result: the baseline that transport_bench compares against.
// Not thread-safe (it sets no global state, but runs child processes).
#ifndef LEEWAY_BENCH_PERFTEST_H_
#define LEEWAY_BENCH_PERFTEST_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace leeway {

struct PerftestResult {
  double bandwidth_mbps = 0;  // 2^20 bytes/s, "overall"
  double message_rate = 0;    // messages/s, "overall"
  double latency_us = 0;      // one-way ("overall"); for *_lat tests
};

// The CPUs each side runs on (perftest's -c); -1: where the scheduler puts it.
struct PerftestCpus {
  int client = -1;
  int server = -1;
};

// `test` is e.g. "ucp_am_bw" or "ucp_am_lat"; `env` sets UCX_TLS and such
// for both processes; `outstanding` is perftest's -O.
absl::StatusOr<PerftestResult> RunPerftest(
    const std::string& test, size_t size, int iterations, int outstanding,
    const std::map<std::string, std::string>& env, const std::string& log_dir,
    PerftestCpus cpus = {});

// Parses the "Final:" line of ucx_perftest's client output.
absl::StatusOr<PerftestResult> ParsePerftestOutput(const std::string& output);

}  // namespace leeway

#endif  // LEEWAY_BENCH_PERFTEST_H_
