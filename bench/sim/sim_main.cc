// leeway-sim: the communication study's projection (issue 7). Validates the
// iteration model (iteration_sim.h) against a measured study table, after
// calibrating it with two numbers from that table, and projects throughput
// and communication share to large clusters.
//
//   bazel-bin/bench/sim/leeway-sim --validate=bench/results/resnet50-1gbit.md
//   bazel-bin/bench/sim/leeway-sim --project --rate_factor=0.97
//
// Calibration: the worker's encode cost per element from BSP top-k with
// equal workers and pipelining; the links' rate is the netlab check's
// (iperf3 for the link, ucx_perftest for one connection), or with
// --link_share=0 fitted to BSP uncompressed in the same configuration.
// Every other row is a prediction. Bytes come from the measured table (the
// model predicts time, not the controller's choices).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/sim/fair_links.h"
#include "bench/sim/iteration_sim.h"
#include "bench/sim/study_table.h"
#include "core/common/file_text.h"
#include "worker/profile_model.h"

ABSL_FLAG(std::string, validate, "", "a comm_study table (.md) to calibrate and validate against");
ABSL_FLAG(double, nominal_gbps, 1, "--validate: the link rate the study ran at (Gbit/s)");
ABSL_FLAG(int, adaptive_dense_clocks, 5,
          "--validate: clocks an adaptive run starts with on a dense plan (the runtime's first "
          "plan waits for a measurement of the link: 5 in the studies of 2026-12-03 and 04; "
          "since 2026-12-05 the plan follows the first measurement, 2)");
ABSL_FLAG(double, adaptive_encode_factor, 1.0,
          "--validate: an adaptive plan's sparse encode per element / BSP top-k's (the "
          "calibrated cost): its 0.1% with the threshold hint costs less than top-k 1% "
          "(compressor_bench 2026-12-07: 0.78 at 1M elements, 0.90 at 2M); 1: the same");
ABSL_FLAG(bool, reused_replies, true,
          "the servers build a reply once for every pull naming the same versions (servers "
          "since 2026-12-04; --validate=false for tables measured before)");
ABSL_FLAG(bool, published_replies, true,
          "with top-k pulls a publication builds the reply for the pulls holding the copy "
          "before it, so the clock's first pull scans no stamps (servers since 2026-12-07, "
          "afternoon; false to --validate tables measured before)");
ABSL_FLAG(bool, published_on_push, true,
          "with top-k pulls a server publishes a chunk for the next clock once every worker's "
          "push of a clock to it is applied, and that clock's pulls find it made (servers since "
          "2026-12-07, night; false to --validate tables measured before)");
ABSL_FLAG(int, cores, 2,
          "--validate: CPU cores of the machine the study ran on, shared by all its processes "
          "(this VM: 2)");
ABSL_FLAG(int, pull_window, 1,
          "--validate: pull requests in flight per worker and server; 1: one, as the runtime's "
          "pull threads send them; 0: all of a clock's at once");
ABSL_FLAG(bool, fair_links, true,
          "--validate: connections share the links max-min fairly (TCP-like), each one held to "
          "--flow_share of the link, instead of FIFO pipes per NIC direction");
ABSL_FLAG(double, flow_share, 0.879,
          "--validate --fair_links: one connection's rate / the link's (netlab check, 1 Gbit/s: "
          "ucx_perftest 104.9 MB/s / iperf3 119.5 MB/s)");
ABSL_FLAG(double, link_share, 0.956,
          "--validate: the links' rate / nominal as measured (netlab check at 1 Gbit/s: iperf3 "
          "119.5 MB/s), so BSP uncompressed is a prediction too; 0: fit it to that row");
ABSL_FLAG(std::string, flow_spreads, "1048576:0.640,4194304:0.741,16777216:0.855",
          "--validate --fair_links: how far apart equal TCP flows into one link finish, by "
          "message size: BYTES:(first through)/(last through) of four flows started together "
          "on open connections (bench/netlab/flow_spread.sh at 1 Gbit/s, mean of 3 runs); each "
          "message's share is weighted by a factor uniform in 1 +- a spread fitted to its size; "
          "empty: flows share exactly");
ABSL_FLAG(int, seeds, 9,
          "--validate: seeds simulated per row, the median reported (the model's middle, where the "
          "study has the median of its few)");
ABSL_FLAG(bool, project, false, "project to large clusters");
ABSL_FLAG(std::string, model, "gpt3-xl", "--project: the layer list");
ABSL_FLAG(double, gpu_ms, 310, "--project: forward + backward per iteration and GPU");
ABSL_FLAG(int, batch, 8, "--project: samples per iteration and GPU");
ABSL_FLAG(std::string, workers, "8,64,1024", "--project: worker counts");
ABSL_FLAG(std::string, servers, "1,8,128,1024",
          "--project: server counts (at most the workers; as many as workers: co-located)");
ABSL_FLAG(std::string, gbps, "25,100,400", "--project: NIC rates, Gbit/s");
ABSL_FLAG(double, rate_factor, 0.97, "--project: effective / nominal rate (from --validate)");
ABSL_FLAG(double, latency_us, 5, "--project: one-way latency per message");
ABSL_FLAG(double, jitter, 0.1, "--project: per-iteration GPU time jitter");
ABSL_FLAG(double, chunk_mb, 64, "--project: largest chunk (smaller where the servers need it)");
ABSL_FLAG(int, clocks, 8, "--project: clocks simulated (2 of them warm-up)");
ABSL_FLAG(int, apply_threads, 8,
          "--project: apply threads per server (the measured one-thread rates divided by it)");

namespace leeway {
namespace sim {
namespace {

constexpr double kTopkDensity = 0.01;

// One thread of this VM, per element of fp32 input (bench/kernels_bench,
// 16 M elements, README "Codecs (CPU)"): the worker's encode with error
// feedback and the server's decode_accumulate (its SGD apply). Top-k's
// worker cost is calibrated instead: the runtime adds momentum correction
// and residual bookkeeping to the codec's selection. fp16 with F16C, as the
// studies of 2026-12-03 ran it.
struct CodecCost {
  double encode_s;
  double apply_s;
};
constexpr CodecCost kNone{4 / 1.74e9, 4 / 3.52e9};
constexpr CodecCost kFp16{4 / 3.13e9, 4 / 7.49e9};
constexpr CodecCost kTopk{4 / 1.32e9, 4 / 62.22e9};

// A server's CPU per element of a chunk for each pull it answers (one
// thread of this VM, bench/pull_bench, 4M-element chunks, README "Pulls"):
// every pull scans the chunk's change stamps, then sends the delta or, when
// every element changed, the dense chunk; with top-k pulls the clock's
// first read also publishes (a top-k of the difference), once a chunk and
// clock. after_dense_s is the dense row (2026-12-04 the two rows differ
// by 10%). pull_bench times the publication only with the read after it
// (11.87 ms): served_s is taken as the delta's scan and publish_s as the
// rest.
struct ReadCost {
  double delta_s;        // after a clock of top-k pushes
  double after_dense_s;  // after a clock of dense pushes
  double served_s;       // top-k pulls: a read of the published copy
  double publish_s;      // top-k pulls: the publication
};
constexpr ReadCost kRead{5.13e-3 / 4194304, 4.16e-3 / 4194304, 5.13e-3 / 4194304,
                         6.74e-3 / 4194304};

std::vector<Tensor> Model(const std::string& name, uint64_t* elements) {
  absl::StatusOr<std::vector<ProfileTensor>> tensors = ProfileModel(name);
  if (!tensors.ok()) {
    std::fprintf(stderr, "%s\n", tensors.status().ToString().c_str());
    std::exit(2);
  }
  double total = 0;
  for (const ProfileTensor& t : *tensors) total += t.cost;
  std::vector<Tensor> out;
  *elements = 0;
  for (const ProfileTensor& t : *tensors) {
    out.push_back({t.elements(), t.cost / total});
    *elements += t.elements();
  }
  return out;
}

Result MustSimulate(const std::vector<Tensor>& model, const Cluster& c, const Job& j,
                    int seeds = 1) {
  absl::StatusOr<Result> r = SimulateMedian(model, c, j, seeds);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    std::exit(2);
  }
  return *r;
}

// x in [lo, hi] where f(x) crosses zero (f monotone), in log space when lo > 0.
double Bisect(double lo, double hi, bool log_space, const std::function<double(double)>& f) {
  const bool rising = f(hi) > f(lo);
  for (int i = 0; i < 40; ++i) {
    const double mid = log_space ? std::sqrt(lo * hi) : (lo + hi) / 2;
    ((f(mid) > 0) == rising ? hi : lo) = mid;
  }
  return log_space ? std::sqrt(lo * hi) : (lo + hi) / 2;
}

int64_t Staleness(const std::string& configuration) {
  if (configuration.rfind("bsp", 0) == 0) return 0;
  if (configuration.rfind("asp", 0) == 0) return -1;
  int64_t s = 0;
  const std::string digits = configuration.substr(3, configuration.find('-') - 3);
  return absl::SimpleAtoi(digits, &s) ? s : 0;
}

// How a sparse (top-k) chunk is pulled: dense fp32; as built by default, a
// delta (exact, 4 + 4 bytes a changed element, or the dense chunk when
// smaller: after `workers` independent top-k pushes 1 - (1 - density)^W of
// the elements changed); or with top-k pulls (the servers publish a top-k
// a clock).
enum class Pulls { kDense, kDelta, kTopK };

double PullBytes(Pulls pulls, int workers) {
  switch (pulls) {
    case Pulls::kDense: return 4;
    case Pulls::kDelta: return std::min(4.0, 8 * (1 - std::pow(1 - kTopkDensity, workers)));
    case Pulls::kTopK: return kTopkDensity * 8;
  }
  return 4;
}

// The server's CPU per pull and element for the first pull of a chunk and
// clock: with top-k pulls it publishes the chunk (under the chunk's
// exclusive lock, as Chunk::Read does), which builds the reply too (before
// --published_replies the pull then scanned the stamps);
// otherwise the sparse share's chunks send deltas and the dense share's the
// whole chunk after the scan.
double ReadPerPull(Pulls pulls, double sparse_share) {
  if (pulls == Pulls::kTopK) {
    return kRead.publish_s + (absl::GetFlag(FLAGS_published_replies) ? 0 : kRead.served_s);
  }
  return sparse_share * kRead.delta_s + (1 - sparse_share) * kRead.after_dense_s;
}
// A later pull of the same chunk and clock reuses the reply the first one
// built (Chunk::Read); without reuse it reads again, but never publishes
// twice.
double RereadPerPull(Pulls pulls, double sparse_share) {
  if (absl::GetFlag(FLAGS_reused_replies)) return 0;
  if (pulls == Pulls::kTopK) return kRead.served_s;
  return ReadPerPull(pulls, sparse_share);
}

// The job a measured row describes: its consistency, speeds and pipelining,
// and its bytes split into push and pull by what the codec sends.
Job RowJob(const StudyTable& t, const StudyRow& row, uint64_t elements, double encode) {
  Job j;
  j.gpu_s = t.gpu_ms / 1000;
  j.samples_per_iteration = t.batch;
  j.clocks = t.clocks;
  j.warmup_clocks = 2;
  j.staleness = Staleness(row.configuration);
  j.overlap = row.overlap;
  if (row.stragglers) {
    j.straggler = 1.5;
    j.jitter = 0.3;
  }
  double total = row.bytes_per_iteration / static_cast<double>(elements);
  absl::string_view codec = row.configuration;
  codec.remove_prefix(codec.find('-') + 1);
  // "+pulls": the servers publish a top-k of each chunk a clock; otherwise
  // a sparse chunk's pull carries the union of the workers' top-k sets.
  const bool topk_pulls = absl::ConsumeSuffix(&codec, "+pulls");
  if (codec == "adaptive") {
    // The dense first plan: fp32 pushes, pulls dense or the published
    // top-k. The table's bytes average its measured clocks, the dense ones
    // too; the planned clocks carry the rest.
    j.dense_clocks = std::min(absl::GetFlag(FLAGS_adaptive_dense_clocks), j.clocks);
    j.dense.pull_bytes_per_element = PullBytes(topk_pulls ? Pulls::kTopK : Pulls::kDense, 0);
    j.dense.encode_s_per_element = kNone.encode_s;
    j.dense.apply_s_per_element = kNone.apply_s;
    j.dense.read_s_per_element = ReadPerPull(topk_pulls ? Pulls::kTopK : Pulls::kDelta, 0);
    j.dense.reread_s_per_element = RereadPerPull(topk_pulls ? Pulls::kTopK : Pulls::kDelta, 0);
    const int measured = j.clocks - j.warmup_clocks;
    const int dense = std::max(0, j.dense_clocks - j.warmup_clocks);
    const double dense_total = 4 + j.dense.pull_bytes_per_element;
    if (measured > dense) total = (total * measured - dense_total * dense) / (measured - dense);
  }
  const double topk_push = kTopkDensity * 8;
  const double sparse_pull = PullBytes(topk_pulls ? Pulls::kTopK : Pulls::kDelta, t.workers);
  // The share of elements pushed sparse: all for top-k, none for none and
  // fp16; adaptive's from its bytes (the controller keeps small and
  // critical layers dense and sparsifies the large ones), where a dense
  // element costs 4 + 4 bytes and a sparse one topk_push + sparse_pull.
  double sparse = 0;
  if (codec == "none") {
    j.push_bytes_per_element = 4;
  } else if (codec == "fp16") {
    j.push_bytes_per_element = 2;
  } else if (codec == "topk") {
    j.push_bytes_per_element = topk_push;
    sparse = 1;
  } else {
    sparse = std::clamp((8 - total) / (8 - topk_push - sparse_pull), 0.0, 1.0);
    j.push_bytes_per_element = sparse * topk_push + (1 - sparse) * 4;
  }
  const CodecCost dense = codec == "fp16" ? kFp16 : kNone;
  const double sparse_encode =
      codec == "adaptive" ? encode * absl::GetFlag(FLAGS_adaptive_encode_factor) : encode;
  j.encode_s_per_element = sparse * sparse_encode + (1 - sparse) * dense.encode_s;
  j.apply_s_per_element = sparse * kTopk.apply_s + (1 - sparse) * dense.apply_s;
  j.read_s_per_element = ReadPerPull(topk_pulls ? Pulls::kTopK : Pulls::kDelta, sparse);
  j.reread_s_per_element = RereadPerPull(topk_pulls ? Pulls::kTopK : Pulls::kDelta, sparse);
  j.pull_bytes_per_element = std::max(0.0, total - j.push_bytes_per_element);
  j.publish_on_push = topk_pulls && absl::GetFlag(FLAGS_published_on_push);
  j.published_pulls = topk_pulls;
  return j;
}

// Every NIC at `bytes_per_s`; a connection on fair links at its share.
void SetRate(double bytes_per_s, Cluster* cluster) {
  cluster->worker_bytes_per_s = cluster->server_bytes_per_s = bytes_per_s;
  cluster->flow_bytes_per_s =
      cluster->fair_links ? absl::GetFlag(FLAGS_flow_share) * bytes_per_s : 0;
}

int Validate(const std::string& path) {
  const std::string text = ReadFileOrEmpty(path);
  absl::StatusOr<StudyTable> table = ParseStudyTable(text);
  if (!table.ok()) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), table.status().ToString().c_str());
    return 2;
  }
  uint64_t elements = 0;
  const std::vector<Tensor> model = Model(table->workload, &elements);
  Cluster cluster;
  cluster.workers = table->workers;
  cluster.servers = table->servers;
  cluster.cores = absl::GetFlag(FLAGS_cores);
  cluster.pull_window = absl::GetFlag(FLAGS_pull_window);
  cluster.fair_links = absl::GetFlag(FLAGS_fair_links);
  if (cluster.fair_links) {
    absl::StatusOr<Unfairness> unfairness =
        UnfairnessFromSpreads(absl::GetFlag(FLAGS_flow_spreads));
    if (!unfairness.ok()) {
      std::fprintf(stderr, "--flow_spreads: %s\n", unfairness.status().ToString().c_str());
      return 2;
    }
    cluster.unfairness = *unfairness;
  }
  const int seeds = absl::GetFlag(FLAGS_seeds);
  const double nominal = absl::GetFlag(FLAGS_nominal_gbps) * 1e9 / 8;
  auto find = [&](const char* config) -> const StudyRow* {
    for (const StudyRow& r : table->rows) {
      if (!r.stragglers && r.overlap && r.configuration == config) return &r;
    }
    return nullptr;
  };
  const StudyRow* dense = find("bsp-none");
  const StudyRow* topk = find("bsp-topk");
  if (dense == nullptr || topk == nullptr) {
    std::fprintf(stderr, "%s: needs bsp-none and bsp-topk rows (equal, pipelining on)\n", path.c_str());
    return 2;
  }
  double encode = 0;
  auto predicted = [&](const StudyRow& row) {
    return MustSimulate(model, cluster, RowJob(*table, row, elements, encode), seeds);
  };
  const double measured_share = absl::GetFlag(FLAGS_link_share);
  const double factor = measured_share > 0 ? measured_share : Bisect(0.01, 10, true, [&](double f) {
    SetRate(f * nominal, &cluster);
    return predicted(*dense).samples_per_s - dense->samples_per_s;
  });
  SetRate(factor * nominal, &cluster);
  encode = Bisect(0, 1e-6, false, [&](double e) {
    encode = e;
    return predicted(*topk).samples_per_s - topk->samples_per_s;
  });
  std::printf(
      "Calibrated on %s: effective rate %.3f of %.2f Gbit/s (%s), encode %.2f ns "
      "per element (bsp-topk), all processes sharing %d cores, %s, pulls in flight per "
      "worker and server: %d (0: all), %s; every other row is a prediction.\n\n",
      path.c_str(), factor, absl::GetFlag(FLAGS_nominal_gbps),
      measured_share > 0 ? "measured, --link_share" : "bsp-none", encode * 1e9, cluster.cores,
      absl::StrCat(
          absl::GetFlag(FLAGS_reused_replies) ? "a reply built once for the pulls of a clock"
                                              : "every pull building its own reply",
          absl::GetFlag(FLAGS_published_replies) ? ""
                                                 : " (top-k pulls: after a scan of the stamps)",
          absl::GetFlag(FLAGS_published_on_push) ? ", publications made once every push is in" : "")
          .c_str(),
      cluster.pull_window,
      cluster.fair_links
          ? absl::StrCat("links shared fairly, a connection at most ",
                         absl::GetFlag(FLAGS_flow_share),
                         " of one, each message's share weighted by a factor uniform in 1 +- a "
                         "spread by its size (",
                         cluster.unfairness.ToString(), "), median of ", seeds, " seeds")
                .c_str()
          : "FIFO links");
  std::printf(
      "| workers | configuration | pipelining | measured samples/s | predicted | error | "
      "measured comm share | predicted | measured staleness p99 | predicted |\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  int within = 0, predictions = 0;
  for (const StudyRow& row : table->rows) {
    const Result r = predicted(row);
    const double error = r.samples_per_s / row.samples_per_s - 1;
    const bool calibration = (&row == dense && measured_share <= 0) || &row == topk;
    if (!calibration) {
      ++predictions;
      if (std::fabs(error) <= 0.15) ++within;
    }
    std::printf("| %s | %s | %s | %.1f | %.1f | %+.1f%%%s | %.1f%% | %.1f%% | %s | %.1f |\n",
                row.stragglers ? "stragglers" : "equal", row.configuration.c_str(),
                row.overlap ? "on" : "off", row.samples_per_s, r.samples_per_s, error * 100,
                calibration ? " (calibration)" : "", row.comm_share * 100, r.comm_share * 100,
                row.staleness_p99 < 0 ? "-" : absl::StrCat(row.staleness_p99).c_str(),
                r.staleness_p99);
  }
  std::printf("\n%d of %d predictions within 15%% of the measured throughput.\n", within, predictions);

  // The same cluster with the worker's encode where it belongs: on the GPU.
  // Here four workers' top-k selections, momentum and residuals run on two
  // cores shared with everything else; a GPU does them in a few passes
  // over its memory, which the model counts as free (as --project does).
  std::printf("\nThe same runs with the encode on the GPU (the model, calibrated above, with "
              "the worker's encode cost set to 0):\n\n"
              "| workers | configuration | pipelining | samples/s | / bsp-none | comm share |\n"
              "|---|---|---|---:|---:|---:|\n");
  double baseline = 0;
  for (const StudyRow& row : table->rows) {
    Job j = RowJob(*table, row, elements, encode);
    j.encode_s_per_element = 0;
    const Result r = MustSimulate(model, cluster, j, seeds);
    if (row.configuration == "bsp-none" && row.overlap) baseline = r.samples_per_s;
    std::printf("| %s | %s | %s | %.1f | %.2f | %.1f%% |\n",
                row.stragglers ? "stragglers" : "equal", row.configuration.c_str(),
                row.overlap ? "on" : "off", r.samples_per_s,
                baseline > 0 ? r.samples_per_s / baseline : 0.0, r.comm_share * 100);
  }
  return 0;
}

std::vector<int> Ints(const std::string& list) {
  std::vector<int> out;
  for (absl::string_view part : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    int v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1) {
      std::fprintf(stderr, "bad list '%s'\n", list.c_str());
      std::exit(2);
    }
    out.push_back(v);
  }
  return out;
}

int Project() {
  uint64_t elements = 0;
  const std::string name = absl::GetFlag(FLAGS_model);
  const std::vector<Tensor> model = Model(name, &elements);
  struct Config {
    const char* name;
    int64_t staleness;
    double push, apply;
    Pulls pulls;
  };
  // "+pulls": the servers publish the top 1% of each chunk's change a clock
  // (leeway-server --pull_density, error feedback on the server).
  const Config configs[] = {
      {"bsp-none", 0, 4, kNone.apply_s, Pulls::kDense},
      {"bsp-fp16", 0, 2, kFp16.apply_s, Pulls::kDense},
      {"ssp2-topk", 2, kTopkDensity * 8, kTopk.apply_s, Pulls::kDelta},
      {"ssp2-topk+pulls", 2, kTopkDensity * 8, kTopk.apply_s, Pulls::kTopK},
  };
  std::printf("Projection: %s (%.0f M parameters), %.0f ms GPU per iteration and %d samples per GPU, "
              "jitter +-%.0f%%, %.0f us latency, links at %.2f of nominal, %.0f MB chunks, encode "
              "on the GPU (free), server apply and pull reads (a reply built once a chunk and clock) at this VM's one-thread rates over %d threads; "
              "pulls as built carry the elements changed since the worker's last pull, 8 bytes "
              "each, or the dense fp32 chunk when that is smaller: under top-k the union of the "
              "W workers' sets, 1 - (1 - density)^W of the elements, dense from about 50 "
              "workers on.\n\n",
              name.c_str(), elements / 1e6, absl::GetFlag(FLAGS_gpu_ms), absl::GetFlag(FLAGS_batch),
              absl::GetFlag(FLAGS_jitter) * 100, absl::GetFlag(FLAGS_latency_us),
              absl::GetFlag(FLAGS_rate_factor), absl::GetFlag(FLAGS_chunk_mb),
              absl::GetFlag(FLAGS_apply_threads));
  std::printf("| Gbit/s | workers | servers | configuration | s/iteration | comm share | samples/s | "
              "/ bsp-none |\n|---:|---:|---:|---|---:|---:|---:|---:|\n");
  for (int gbps : Ints(absl::GetFlag(FLAGS_gbps))) {
    for (int w : Ints(absl::GetFlag(FLAGS_workers))) {
      for (int s : Ints(absl::GetFlag(FLAGS_servers))) {
        if (s > w) continue;
        Cluster c;
        c.workers = w;
        c.servers = s;
        c.worker_bytes_per_s = c.server_bytes_per_s =
            gbps * 1e9 / 8 * absl::GetFlag(FLAGS_rate_factor);
        c.latency_s = absl::GetFlag(FLAGS_latency_us) * 1e-6;
        // Chunks small enough that every server holds some of the model.
        c.chunk_bytes = std::min(absl::GetFlag(FLAGS_chunk_mb) * (1 << 20),
                                 std::ceil(4.0 * elements / s));
        double baseline = 0;
        for (const Config& config : configs) {
          Job j;
          j.gpu_s = absl::GetFlag(FLAGS_gpu_ms) / 1000;
          j.samples_per_iteration = absl::GetFlag(FLAGS_batch);
          j.jitter = absl::GetFlag(FLAGS_jitter);
          j.clocks = absl::GetFlag(FLAGS_clocks);
          j.staleness = config.staleness;
          j.push_bytes_per_element = config.push;
          j.pull_bytes_per_element = PullBytes(config.pulls, w);
          const int threads = absl::GetFlag(FLAGS_apply_threads);
          j.apply_s_per_element = config.apply / threads;
          const double sparse = config.pulls == Pulls::kDense ? 0 : 1;
          j.read_s_per_element = ReadPerPull(config.pulls, sparse) / threads;
          j.reread_s_per_element = RereadPerPull(config.pulls, sparse) / threads;
          j.published_pulls = config.pulls == Pulls::kTopK;
          j.publish_on_push = j.published_pulls && absl::GetFlag(FLAGS_published_on_push);
          const Result r = MustSimulate(model, c, j);
          if (baseline == 0) baseline = r.samples_per_s;
          std::printf("| %d | %d | %d | %s | %.3f | %.1f%% | %.0f | %.2f |\n", gbps, w, s,
                      config.name, r.seconds_per_clock, r.comm_share * 100, r.samples_per_s,
                      r.samples_per_s / baseline);
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace sim
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (!absl::GetFlag(FLAGS_validate).empty()) return leeway::sim::Validate(absl::GetFlag(FLAGS_validate));
  if (absl::GetFlag(FLAGS_project)) return leeway::sim::Project();
  std::fprintf(stderr, "leeway-sim: --validate=TABLE.md or --project (see --help)\n");
  return 2;
}
