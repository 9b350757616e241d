// The communication study (issue 7): one workload under every consistency
// and compression configuration, with equal workers and with stragglers,
// with pipelining on and off, on loopback or - run inside bench/netlab's
// namespaces with --netns - on a bandwidth-limited network. Every figure
// is a ratio to BSP uncompressed with pipelining, measured in the same run
// at the same worker speeds. Writes a Markdown table (and, with --out, an
// SVG of throughput and communication-share bars next to it).
//
//   bench/netlab/netlab.sh run --rate 1gbit -- bazel-bin/bench/comm_study
//     --netns=lw --workload=resnet50 --gpu_ms=100 --clocks=20 --out=bench/results/resnet50-1gbit
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/launch_runner.h"
#include "bench/thread_cpu.h"

ABSL_FLAG(std::string, workload, "resnet50",
          "resnet50, resnet50-fused-norms, gpt2-small, bert-base or mnist");
ABSL_FLAG(std::string, configs,
          "bsp-none,bsp-fp16,bsp-topk,ssp2-none,ssp2-adaptive,asp-adaptive,bsp-topk+pulls,"
          "ssp2-adaptive+pulls",
          "configurations (the first row of each group is always bsp-none)");
ABSL_FLAG(std::string, speeds, "equal,stragglers",
          "equal workers, and/or stragglers (the last worker --straggler slower, all +-jitter)");
ABSL_FLAG(std::string, overlap, "on,off", "pipelining on and/or off (the ablation)");
ABSL_FLAG(double, straggler, 1.5, "the slow worker's GPU time factor");
ABSL_FLAG(double, jitter, 0.3, "per-iteration GPU time jitter of every worker");
ABSL_FLAG(double, gpu_ms, 100, "emulated GPU forward + backward per iteration (profiles)");
ABSL_FLAG(std::string, gradients, "host",
          "profiles: host, or device for gradients in GPU memory (compression on the GPU; "
          "needs one)");
ABSL_FLAG(int, batch, 0,
          "samples per iteration and worker (0: the batch --gpu_ms stands for: resnet50 256 "
          "images, gpt2-small 32 sequences of 1,024 tokens, bert-base 64 of 512; mnist 32)");
ABSL_FLAG(int, clocks, 20, "iterations per run");
ABSL_FLAG(int, warmup_clocks, 2,
          "first clocks of each run left out of the figures (the dense first pull; not for mnist)");
ABSL_FLAG(int, plan_window, 4,
          "clocks between compression plans (short runs need short windows: the first plan "
          "is dense until the bandwidth is measured)");
ABSL_FLAG(int, seeds, 1, "runs per configuration (medians)");
ABSL_FLAG(int, servers, 2, "servers");
ABSL_FLAG(int, push_batch_kib, 64, "launch --push-batch-kib: batched small pushes (0: off)");
ABSL_FLAG(int, pull_batch_kib, 4096, "launch --pull-batch-kib: batched pulls (0: off)");
ABSL_FLAG(int, workers, 4, "workers");
ABSL_FLAG(std::string, netns, "", "bench/netlab namespaces prefix (run inside <prefix>-coord)");
ABSL_FLAG(std::string, data_dir, "data/mnist", "MNIST files (--workload=mnist)");
ABSL_FLAG(std::string, bin_dir, "bazel-bin", "where cli/leeway and the others were built");
ABSL_FLAG(std::string, work_dir, "/tmp/leeway-comm-study", "run directories");
ABSL_FLAG(bool, thread_cpu, false,
          "sample /proc during each run and add where the machine's CPU went, by role and "
          "thread, in the middle of the run (--cpu_window)");
ABSL_FLAG(std::string, cpu_window, "0.35,0.95",
          "--thread_cpu: the fractions of each run's time profiled (start-up and the dense "
          "first clocks left out)");
ABSL_FLAG(std::string, out, "",
          "write <out>.md and <out>.svg (mnist: and <out>-curves.svg, accuracy against time)");

namespace leeway {
namespace {

struct Configuration {
  std::string name;
  std::string staleness;
  std::string compression;
  double pull_density = 0;  // launch --pull-density
};

// "+pulls": the servers publish 1% of each chunk a clock (top-k with error
// feedback) instead of every changed element.
constexpr double kPullDensity = 0.01;

absl::StatusOr<Configuration> Named(const std::string& name) {
  static const std::vector<Configuration> kAll = {
      {"bsp-none", "0", "none"},           {"bsp-fp16", "0", "fixed:fp16"},
      {"bsp-topk", "0", "fixed:topk:0.01"}, {"ssp2-none", "2", "none"},
      {"ssp2-adaptive", "2", "adaptive"},   {"asp-adaptive", "async", "adaptive"},
      {"bsp-topk+pulls", "0", "fixed:topk:0.01", kPullDensity},
      {"ssp2-adaptive+pulls", "2", "adaptive", kPullDensity}};
  for (const Configuration& c : kAll) {
    if (c.name == name) return c;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown configuration '", name, "'"));
}

struct Row {
  std::string speeds, config;
  bool overlap = true;
  FoldedRuns runs;
  const FoldedRuns* baseline = nullptr;
  std::vector<CpuProfile> cpu;  // --thread_cpu: one per seed
};

// --cpu_window's two fractions, 0 <= from < to <= 1.
absl::StatusOr<std::pair<double, double>> CpuWindow() {
  std::vector<std::string> parts = absl::StrSplit(absl::GetFlag(FLAGS_cpu_window), ',');
  double from = 0, to = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &from) || !absl::SimpleAtod(parts[1], &to) ||
      !(0 <= from && from < to && to <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cpu_window wants two fractions from,to with 0 <= from < to <= 1, not \"",
                     absl::GetFlag(FLAGS_cpu_window), "\""));
  }
  return std::make_pair(from, to);
}

// The batch an H100/H200 computes in about 100 ms of forward + backward at
// mixed precision (README, "The communication study"); the MLP's default.
int Batch(const std::string& workload) {
  if (absl::GetFlag(FLAGS_batch) > 0) return absl::GetFlag(FLAGS_batch);
  if (absl::StartsWith(workload, "resnet50")) return 256;
  if (workload == "gpt2-small") return 32;
  if (workload == "bert-base") return 64;
  return 32;
}

std::string CurvesFile() { return absl::GetFlag(FLAGS_out) + "-curves.svg"; }

std::vector<std::string> Flags(const Configuration& c, const std::string& speeds, bool overlap,
                               int seed) {
  const std::string workload = absl::GetFlag(FLAGS_workload);
  std::vector<std::string> f = {
      absl::StrCat("--servers=", absl::GetFlag(FLAGS_servers)),
      absl::StrCat("--workers=", absl::GetFlag(FLAGS_workers)),
      "--staleness=" + c.staleness,
      "--compression=" + c.compression,
      absl::StrCat("--clocks=", absl::GetFlag(FLAGS_clocks)),
      absl::StrCat("--seed=", seed),
      absl::StrCat("--batch=", Batch(workload)),
      absl::StrCat("--plan-window=", absl::GetFlag(FLAGS_plan_window)),
      absl::StrCat("--overlap=", overlap ? "true" : "false"),
      absl::StrCat("--pull-density=", c.pull_density),
      absl::StrCat("--push-batch-kib=", absl::GetFlag(FLAGS_push_batch_kib)),
      absl::StrCat("--pull-batch-kib=", absl::GetFlag(FLAGS_pull_batch_kib))};
  if (!absl::GetFlag(FLAGS_netns).empty()) f.push_back("--netns=" + absl::GetFlag(FLAGS_netns));
  if (workload == "mnist") {
    f.push_back("--data-dir=" + absl::GetFlag(FLAGS_data_dir));
    // Accuracy against time, one line per configuration (seed 1, pipelined).
    if (seed == 1 && overlap && !absl::GetFlag(FLAGS_out).empty()) {
      f.push_back("--plot=" + CurvesFile());
    }
  } else {
    f.push_back("--profile=" + workload);
    f.push_back(absl::StrCat("--warmup-clocks=", absl::GetFlag(FLAGS_warmup_clocks)));
    f.push_back(absl::StrCat("--gpu-ms=", absl::GetFlag(FLAGS_gpu_ms)));
    f.push_back("--gradients=" + absl::GetFlag(FLAGS_gradients));
    if (speeds == "stragglers") {
      f.push_back(absl::StrCat("--straggler=", absl::GetFlag(FLAGS_straggler)));
      f.push_back(absl::StrCat("--jitter=", absl::GetFlag(FLAGS_jitter)));
    }
  }
  return f;
}

// Horizontal bars, one per row.
std::string Bars(const std::string& title, const std::vector<std::string>& labels,
                 const std::vector<double>& values, const std::string& unit, double y0) {
  const double max = std::max(1e-9, *std::max_element(values.begin(), values.end()));
  std::string svg = absl::StrFormat(
      "<text x=\"10\" y=\"%.0f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n", y0 + 16, title);
  for (size_t i = 0; i < values.size(); ++i) {
    const double y = y0 + 28 + 20.0 * i;
    absl::StrAppendFormat(&svg,
                          "<text x=\"10\" y=\"%.0f\" font-size=\"12\">%s</text>\n"
                          "<rect x=\"330\" y=\"%.0f\" width=\"%.1f\" height=\"14\" fill=\"#1f77b4\"/>\n"
                          "<text x=\"%.1f\" y=\"%.0f\" font-size=\"11\">%.2f%s</text>\n",
                          y + 11, labels[i], y, 380 * values[i] / max,
                          336 + 380 * values[i] / max, y + 11, values[i], unit);
  }
  return svg;
}

int Run() {
  const absl::StatusOr<std::pair<double, double>> window = CpuWindow();
  if (!window.ok()) {
    std::fprintf(stderr, "comm_study: %s\n", std::string(window.status().message()).c_str());
    return 2;
  }
  const auto [cpu_from, cpu_to] = *window;
  std::vector<Configuration> configs;
  absl::StatusOr<Configuration> base = Named("bsp-none");
  configs.push_back(*base);
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_configs), ',', absl::SkipEmpty())) {
    absl::StatusOr<Configuration> c = Named(std::string(name));
    if (!c.ok()) {
      std::fprintf(stderr, "comm_study: %s\n", std::string(c.status().message()).c_str());
      return 2;
    }
    if (c->name != "bsp-none") configs.push_back(*c);
  }
  const bool mnist = absl::GetFlag(FLAGS_workload) == "mnist";
  // launch --plot adds its run to the file: start it empty.
  if (mnist && !absl::GetFlag(FLAGS_out).empty()) std::remove(CurvesFile().c_str());
  std::vector<std::string> speeds = absl::StrSplit(absl::GetFlag(FLAGS_speeds), ',', absl::SkipEmpty());
  if (mnist) speeds = {"equal"};  // the MLP trainer has no emulated GPU to slow down
  std::vector<bool> overlaps;
  for (absl::string_view o : absl::StrSplit(absl::GetFlag(FLAGS_overlap), ',', absl::SkipEmpty())) {
    overlaps.push_back(o == "on");
  }
  if (std::find(overlaps.begin(), overlaps.end(), true) == overlaps.end()) {
    overlaps.insert(overlaps.begin(), true);  // the baseline pipelines
  }
  std::vector<Row> rows;
  rows.reserve(speeds.size() * configs.size() * overlaps.size());
  for (const std::string& speed : speeds) {
    const size_t group = rows.size();
    for (bool overlap : overlaps) {
      for (const Configuration& c : configs) {
        std::vector<LaunchSummary> runs;
        std::vector<CpuProfile> cpu;
        for (int seed = 1; seed <= std::max(1, absl::GetFlag(FLAGS_seeds)); ++seed) {
          const std::string dir = absl::StrCat(absl::GetFlag(FLAGS_work_dir), "/", speed, "-",
                                               c.name, overlap ? "" : "-nooverlap", "-", seed);
          std::unique_ptr<ThreadCpuSampler> sampler;
          if (absl::GetFlag(FLAGS_thread_cpu)) {
            sampler = std::make_unique<ThreadCpuSampler>("leeway-", absl::Milliseconds(250));
          }
          absl::StatusOr<LaunchSummary> s =
              RunLaunch(absl::GetFlag(FLAGS_bin_dir), Flags(c, speed, overlap, seed), dir,
                        absl::Minutes(60));
          if (sampler != nullptr) cpu.push_back(ProfileOf(sampler->Stop(), cpu_from, cpu_to));
          if (!s.ok()) {
            std::fprintf(stderr, "comm_study: %s\n", std::string(s.status().message()).c_str());
            return 1;
          }
          std::fprintf(stderr, "%s %s%s seed %d: %.1f samples/s, comm %.1f%%\n", speed.c_str(),
                       c.name.c_str(), overlap ? "" : " (no overlap)", seed, s->samples_per_sec,
                       100 * s->comm_share);
          runs.push_back(*s);
        }
        rows.push_back({speed, c.name, overlap, Fold(runs), nullptr, std::move(cpu)});
      }
    }
    for (size_t i = group; i < rows.size(); ++i) rows[i].baseline = &rows[group].runs;
  }

  std::string md = absl::StrFormat(
      "Workload %s%s, batch %d, %d servers, %d workers, %d clocks (plans every %d%s), %s; medians "
      "of %d "
      "seed(s); ratios to "
      "BSP uncompressed with pipelining at the same worker speeds.\n\n"
      "| workers | configuration | pipelining | samples/s | / BSP | comm share | / BSP | "
      "bytes/iter | / BSP | staleness p99 | compression | msgs/iter | pull wait |%s\n"
      "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|%s\n",
      absl::GetFlag(FLAGS_workload),
      mnist ? "" : absl::StrFormat(" (%.0f ms GPU per iteration)", absl::GetFlag(FLAGS_gpu_ms)),
      Batch(absl::GetFlag(FLAGS_workload)), absl::GetFlag(FLAGS_servers),
      absl::GetFlag(FLAGS_workers), absl::GetFlag(FLAGS_clocks), absl::GetFlag(FLAGS_plan_window),
      mnist ? ""
            : absl::StrFormat("; the first %d left out of the figures",
                              absl::GetFlag(FLAGS_warmup_clocks)),
      absl::GetFlag(FLAGS_netns).empty() ? "loopback"
                                         : "netlab namespaces " + absl::GetFlag(FLAGS_netns),
      std::max(1, absl::GetFlag(FLAGS_seeds)),
      mnist ? " test accuracy: mean (min-max) | / BSP, points |" : "", mnist ? "---:|---:|" : "");
  std::vector<std::string> labels;
  std::vector<double> speedup, comm;
  for (const Row& r : rows) {
    const FoldedRuns& b = *r.baseline;
    absl::StrAppendFormat(
        &md,
        "| %s | %s | %s | %.1f | %.2f | %.1f%% | %.2f | %.0f | %.3f | %.1f | %.1fx "
        "| %.0f | %.1f%% |",
        r.speeds, r.config, r.overlap ? "on" : "off", r.runs.samples_per_sec,
        r.runs.samples_per_sec / b.samples_per_sec, 100 * r.runs.comm_share,
        b.comm_share > 0 ? r.runs.comm_share / b.comm_share : 0, r.runs.bytes_per_iter,
        r.runs.bytes_per_iter / b.bytes_per_iter, r.runs.staleness_p99, r.runs.compression_ratio,
        r.runs.messages_per_iter, 100 * r.runs.pull_wait_share);
    if (mnist) {
      absl::StrAppendFormat(&md, " %.2f%% (%.2f-%.2f) | %+.2f |", 100 * r.runs.accuracy_mean,
                            100 * r.runs.accuracy_min, 100 * r.runs.accuracy_max,
                            100 * (r.runs.accuracy_mean - b.accuracy_mean));
    }
    md += "\n";
    labels.push_back(absl::StrCat(r.speeds, " / ", r.config, r.overlap ? "" : " / no overlap"));
    speedup.push_back(r.runs.samples_per_sec / b.samples_per_sec);
    comm.push_back(100 * r.runs.comm_share);
  }
  if (absl::GetFlag(FLAGS_thread_cpu)) {
    absl::StrAppendFormat(&md,
                          "\nWhere the machine's CPU went, %.0f%%-%.0f%% of each run's time "
                          "(shares of all cores; threads at 0.5%% or more):\n\n",
                          100 * cpu_from, 100 * cpu_to);
    for (const Row& r : rows) {
      for (size_t seed = 0; seed < r.cpu.size(); ++seed) {
        absl::StrAppendFormat(&md, "- %s / %s%s, seed %d: %s\n", r.speeds, r.config,
                              r.overlap ? "" : " / no overlap", seed + 1, r.cpu[seed].Summary());
      }
    }
  }
  std::printf("%s", md.c_str());
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    std::ofstream(out + ".md") << md;
    const double half = 40 + 20.0 * rows.size();
    std::ofstream(out + ".svg") << absl::StrFormat(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"820\" height=\"%.0f\" "
        "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
        2 * half + 10)
        << Bars("throughput / BSP uncompressed", labels, speedup, "x", 0)
        << Bars("communication share of iteration time", labels, comm, "%", half) << "</svg>\n";
    std::fprintf(stderr, "wrote %s.md and %s.svg%s\n", out.c_str(), out.c_str(),
                 mnist ? absl::StrCat(" and ", CurvesFile()).c_str() : "");
  }
  return 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return leeway::Run();
}
