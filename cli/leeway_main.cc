// leeway: the admin CLI. Asks the coordinator (gRPC Admin service) how the
// job is doing and changes what an operator may change.
//
//   leeway [--coordinator host:port] [--token-file F] [-o table|json]
//          [--watch SECONDS] <command>
//   commands: status | staleness | throughput | layers |
//             compression set <policy> | pause | resume | checkpoint
//
// Flags also come from LEEWAY_COORDINATOR and LEEWAY_TOKEN_FILE. Output is
// an aligned table or stable JSON (proto field names, defaults printed).
// Errors are one line on stderr and a non-zero exit: 1 when the call
// failed (unreachable coordinator, refused token, bad request), 2 for a
// usage error. `leeway launch` arrives with the worker runtime.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "admin.grpc.pb.h"
#include "cli/launch.h"
#include "cli/table.h"
#include "core/common/main_init.h"
#include "core/common/token_file.h"

ABSL_FLAG(std::string, coordinator, "", "the coordinator's host:port (LEEWAY_COORDINATOR)");
ABSL_FLAG(std::string, token_file, "", "the cluster token's file (LEEWAY_TOKEN_FILE)");
ABSL_FLAG(std::string, o, "table", "output: table or json");
ABSL_FLAG(int, watch, 0, "read-only commands: repeat every N seconds");
ABSL_FLAG(int, timeout, 10, "seconds a call may take");

// leeway launch
ABSL_FLAG(int, servers, 2, "launch: parameter servers");
ABSL_FLAG(int, workers, 4, "launch: workers");
ABSL_FLAG(std::string, staleness, "2", "launch: SSP bound (0: BSP) or async");
ABSL_FLAG(std::string, compression, "adaptive",
          "launch: none, adaptive or fixed:<codec>[:<density>]");
ABSL_FLAG(std::string, model, "mlp", "launch: the model (mlp: MNIST classifier)");
ABSL_FLAG(std::string, hidden, "256", "launch: the MLP's hidden widths");
ABSL_FLAG(int, clocks, 1000, "launch: iterations per worker");
ABSL_FLAG(int, batch, 32, "launch: samples per iteration and worker");
ABSL_FLAG(float, learning_rate, 0.1f, "launch: the servers' SGD learning rate");
ABSL_FLAG(std::string, transport, "sm", "launch: sm (shared memory) or tcp");
ABSL_FLAG(std::string, data_dir, "data/mnist", "launch: MNIST IDX files");
ABSL_FLAG(std::string, run_dir, "", "launch: logs and reports (default: a new /tmp dir)");
ABSL_FLAG(std::string, plot, "", "launch: write an SVG of loss and accuracy here");
ABSL_FLAG(std::string, bin_dir, "", "launch: where the leeway-* binaries are");
ABSL_FLAG(uint64_t, seed, 1, "launch: initial weights and data order");
ABSL_FLAG(int, plan_window, 50, "launch: clocks between compression plans");
ABSL_FLAG(std::string, profile, "",
          "launch: gpt2-small|bert-base|resnet50|resnet50-fused-norms tensors with emulated "
          "compute (no MNIST)");
ABSL_FLAG(double, gpu_ms, 100, "launch --profile: GPU forward+backward ms per iteration");
ABSL_FLAG(double, straggler, 1, "launch --profile: the last worker's GPU time factor");
ABSL_FLAG(double, jitter, 0, "launch --profile: per-iteration GPU time jitter (0.3: +-30%)");
ABSL_FLAG(bool, overlap, true, "launch: false for the no-pipelining ablation");
ABSL_FLAG(std::string, gradients, "host",
          "launch: host, or device for gradients and parameters in GPU memory (the MLP on "
          "cuBLAS, compression on the GPU)");
ABSL_FLAG(int, peer_timeout_ms, 0,
          "launch: heartbeat and connection timeout (0: 5 s and 3 s, 30 s with --netns)");
ABSL_FLAG(int, warmup_clocks, 0,
          "launch: first clocks left out of the throughput, comm share and bytes figures");
ABSL_FLAG(int, push_batch_kib, 64,
          "launch: small chunk pushes travel together in messages of up to this many KiB (0: off)");
ABSL_FLAG(int, pull_batch_kib, 4096,
          "launch: pulls of one clock travel together in messages whose replies should take up to "
          "this many KiB (each chunk's last reply; 16 MiB as fp32 at most; 0: off)");
ABSL_FLAG(double, pull_density, 0,
          "launch: servers publish this fraction of each chunk a clock to pulls (top-k; 0: exact)");
ABSL_FLAG(std::string, netns, "",
          "launch: run the roles in bench/netlab/netlab.sh's namespaces with this prefix");

namespace leeway {
namespace {

constexpr char kUsage[] =
    "usage: leeway [--coordinator host:port] [--token-file F] [-o table|json] "
    "[--watch N] status|staleness|throughput|layers|compression set <policy>|"
    "pause|resume|checkpoint\n"
    "       leeway launch [--servers S] [--workers W] [--staleness N|async] "
    "[--compression none|adaptive|fixed:<codec>[:<density>]] [--model mlp] "
    "[--profile gpt2-small|bert-base|resnet50[-fused-norms] [--gpu-ms MS] [--straggler F] "
    "[--jitter J]] "
    "[--gradients host|device] "
    "[--clocks N] [--push-batch-kib K] [--pull-batch-kib K] "
    "[--transport sm|tcp] [--netns PREFIX] [--data-dir D] [--plot FILE.svg] [-o table|json]";

// A call's outcome: the message, or a one-line error.
struct Call {
  grpc::Status status;
  std::string what;
};

std::string Json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, options);
  return out;
}

std::string Health(v1::Health h) {
  switch (h) {
    case v1::HEALTH_ALIVE: return "alive";
    case v1::HEALTH_SUSPECT: return "suspect";
    case v1::HEALTH_DEAD: return "dead";
    case v1::HEALTH_DOWN: return "down";
    default: return "?";
  }
}

std::string CodecText(v1::Codec c) {
  std::string name = v1::Codec_Name(c);
  for (char& ch : name) ch = static_cast<char>(std::tolower(ch));
  return name.substr(std::string("codec_").size());
}

std::string StatusText(const v1::ClusterStatus& s) {
  std::string out = absl::StrFormat(
      "job %d  clocks %d..%d  staleness %s  %s  shard map v%d  plan v%d  up %.0fs\n",
      s.job_id(), s.min_clock(), s.max_clock(),
      s.staleness_bound() < 0 ? "async" : absl::StrCat(s.staleness_bound()),
      s.paused() ? "PAUSED" : "running", s.shard_map_version(), s.plan_version(),
      s.uptime_ms() / 1000.0);
  Table t({"ROLE", "RANK", "HOST", "DATA ADDRESS", "HEALTH", "CLOCK", "INCARNATION"});
  for (const v1::Member& m : s.members()) {
    t.Add({m.role() == v1::ROLE_WORKER ? "worker" : "server", absl::StrCat(m.rank()),
           m.host(), m.data_address(), Health(m.health()), absl::StrCat(m.clock()),
           absl::StrCat(m.incarnation())});
  }
  return out + t.Render();
}

std::string StalenessText(const v1::StalenessReport& r) {
  auto row = [](const v1::StalenessSummary& s) {
    return std::vector<std::string>{absl::StrFormat("%g", s.p50()),
                                    absl::StrFormat("%g", s.p99()),
                                    absl::StrFormat("%g", s.max()), absl::StrCat(s.count())};
  };
  std::string out = absl::StrCat(
      "bound ", r.bound() < 0 ? "async" : absl::StrCat(r.bound()), "  overall p50 ",
      r.overall().p50(), " p99 ", r.overall().p99(), " max ", r.overall().max(), "\n");
  Table workers({"WORKER", "CLOCK", "HEALTH", "P50", "P99", "MAX", "PUSHES"});
  for (const auto& w : r.workers()) {
    std::vector<std::string> cells = {absl::StrCat(w.rank()), absl::StrCat(w.clock()),
                                      Health(w.health())};
    for (auto& c : row(w.staleness())) cells.push_back(c);
    workers.Add(cells);
  }
  Table layers({"LAYER", "NAME", "P50", "P99", "MAX", "PUSHES"});
  for (const auto& l : r.layers()) {
    std::vector<std::string> cells = {absl::StrCat(l.layer()), l.name()};
    for (auto& c : row(l.staleness())) cells.push_back(c);
    layers.Add(cells);
  }
  return out + workers.Render() + layers.Render();
}

std::string ThroughputText(const v1::ThroughputReport& r) {
  std::string out = absl::StrFormat(
      "samples/s %.1f  bytes/s %.0f  communication share %.1f%%\n", r.samples_per_sec(),
      r.bytes_per_sec(), 100 * r.comm_share());
  Table t({"ROLE", "RANK", "SAMPLES/S", "SENT B/S", "RECEIVED B/S", "COMM SHARE"});
  for (const auto& m : r.members()) {
    t.Add({m.role() == v1::ROLE_WORKER ? "worker" : "server", absl::StrCat(m.rank()),
           absl::StrFormat("%.1f", m.samples_per_sec()),
           absl::StrFormat("%.0f", m.bytes_sent_per_sec()),
           absl::StrFormat("%.0f", m.bytes_received_per_sec()),
           absl::StrFormat("%.3f", m.comm_share())});
  }
  return out + t.Render();
}

std::string CodecOf(const v1::LayerPlan& p) {
  return p.codec() == v1::CODEC_NONE ? "dense" : CodecText(p.codec());
}

std::string LayersText(const v1::LayerStatsReport& r) {
  std::string out = absl::StrCat("plan v", r.plan_version(), "  policy ", r.policy(), "\n");
  Table t({"LAYER", "NAME", "ELEMENTS", "CODEC", "DENSITY", "VALUES", "|G|", "RESIDUAL",
           "REASON"});
  for (const auto& l : r.layers()) {
    t.Add({absl::StrCat(l.layer().id()), l.layer().name(), absl::StrCat(l.layer().elements()),
           CodecOf(l.plan()), absl::StrFormat("%g", l.plan().density()),
           CodecText(l.plan().value_codec()), absl::StrFormat("%.4g", l.stats().gradient_norm()),
           absl::StrFormat("%.3g", l.stats().residual_ratio()), l.plan().reason()});
  }
  return out + t.Render();
}

std::string PlanText(const v1::CompressionPlan& p) {
  std::string out = absl::StrCat("plan v", p.version(), "  policy ", p.policy(),
                                 "  from clock ", p.effective_clock(), "\n");
  Table t({"LAYER", "CODEC", "DENSITY", "REASON"});
  for (const auto& l : p.layers()) {
    t.Add({absl::StrCat(l.layer()), CodecOf(l),
           absl::StrFormat("%g", l.density()), l.reason()});
  }
  return out + t.Render();
}

// Runs one command; returns the exit code.
int Command(v1::Admin::Stub& stub, const std::string& token,
            const std::vector<std::string>& args, bool json) {
  grpc::ClientContext context;
  context.AddMetadata("authorization", "Bearer " + token);
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(absl::GetFlag(FLAGS_timeout)));
  grpc::Status status;
  std::string text;
  auto show = [&](const google::protobuf::Message& m, const std::string& table) {
    text = json ? Json(m) : table;
  };
  const std::string& cmd = args[0];
  if (cmd == "status") {
    v1::ClusterStatus r;
    status = stub.GetClusterStatus(&context, v1::ClusterStatusRequest(), &r);
    show(r, StatusText(r));
  } else if (cmd == "staleness") {
    v1::StalenessReport r;
    status = stub.GetStaleness(&context, v1::StalenessRequest(), &r);
    show(r, StalenessText(r));
  } else if (cmd == "throughput") {
    v1::ThroughputReport r;
    status = stub.GetThroughput(&context, v1::ThroughputRequest(), &r);
    show(r, ThroughputText(r));
  } else if (cmd == "layers") {
    v1::LayerStatsReport r;
    status = stub.GetLayerStats(&context, v1::LayerStatsRequest(), &r);
    show(r, LayersText(r));
  } else if (cmd == "compression" && args.size() == 3 && args[1] == "set") {
    v1::SetCompressionPolicyRequest request;
    request.set_policy(args[2]);
    v1::CompressionPlan r;
    status = stub.SetCompressionPolicy(&context, request, &r);
    show(r, PlanText(r));
  } else if (cmd == "pause" || cmd == "resume") {
    v1::PauseResponse r;
    status = cmd == "pause" ? stub.Pause(&context, v1::PauseRequest(), &r)
                            : stub.Resume(&context, v1::ResumeRequest(), &r);
    show(r, r.paused() ? "paused\n" : "running\n");
  } else if (cmd == "checkpoint") {
    v1::CheckpointResponse r;
    status = stub.Checkpoint(&context, v1::CheckpointRequest(), &r);
    show(r, absl::StrCat("checkpoint request ", r.checkpoint_request_id(), "\n"));
  } else {
    std::fprintf(stderr, "leeway: unknown command \"%s\"\n%s\n",
                 absl::StrJoin(args, " ").c_str(), kUsage);
    return 2;
  }
  if (!status.ok()) {
    const std::string where = absl::GetFlag(FLAGS_coordinator);
    std::string line;
    switch (status.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        line = absl::StrCat("cannot reach the coordinator at ", where);
        break;
      case grpc::StatusCode::UNAUTHENTICATED:
        line = "the coordinator refused the token (UNAUTHENTICATED)";
        break;
      default:
        line = absl::StrCat("the coordinator answered ",
                            absl::StatusCodeToString(
                                static_cast<absl::StatusCode>(status.error_code())));
    }
    std::fprintf(stderr, "leeway: %s: %s\n", line.c_str(), status.error_message().c_str());
    return 1;
  }
  std::fputs(text.c_str(), stdout);
  if (json) std::fputs("\n", stdout);
  std::fflush(stdout);
  return 0;
}

int Main(const std::vector<std::string>& args) {
  if (args.empty()) {
    std::fprintf(stderr, "%s\n", kUsage);
    return 2;
  }
  const std::string output = absl::GetFlag(FLAGS_o);
  if (output != "table" && output != "json") {
    std::fprintf(stderr, "leeway: -o must be table or json\n");
    return 2;
  }
  if (args[0] == "launch") {
    if (args.size() != 1) {
      std::fprintf(stderr, "leeway launch takes flags only\n%s\n", kUsage);
      return 2;
    }
    LaunchOptions o;
    o.servers = absl::GetFlag(FLAGS_servers);
    o.workers = absl::GetFlag(FLAGS_workers);
    o.staleness = absl::GetFlag(FLAGS_staleness);
    o.compression = absl::GetFlag(FLAGS_compression);
    o.model = absl::GetFlag(FLAGS_model);
    o.hidden = absl::GetFlag(FLAGS_hidden);
    o.clocks = absl::GetFlag(FLAGS_clocks);
    o.batch = absl::GetFlag(FLAGS_batch);
    o.learning_rate = absl::GetFlag(FLAGS_learning_rate);
    o.transport = absl::GetFlag(FLAGS_transport);
    o.data_dir = absl::GetFlag(FLAGS_data_dir);
    o.run_dir = absl::GetFlag(FLAGS_run_dir);
    o.plot = absl::GetFlag(FLAGS_plot);
    o.bin_dir = absl::GetFlag(FLAGS_bin_dir);
    o.json = output == "json";
    o.seed = absl::GetFlag(FLAGS_seed);
    o.plan_window = absl::GetFlag(FLAGS_plan_window);
    o.profile = absl::GetFlag(FLAGS_profile);
    o.gpu_ms = absl::GetFlag(FLAGS_gpu_ms);
    o.straggler = absl::GetFlag(FLAGS_straggler);
    o.jitter = absl::GetFlag(FLAGS_jitter);
    o.netns = absl::GetFlag(FLAGS_netns);
    o.overlap = absl::GetFlag(FLAGS_overlap);
    o.gradients = absl::GetFlag(FLAGS_gradients);
    o.pull_density = absl::GetFlag(FLAGS_pull_density);
    o.push_batch_kib = absl::GetFlag(FLAGS_push_batch_kib);
    o.pull_batch_kib = absl::GetFlag(FLAGS_pull_batch_kib);
    o.warmup_clocks = absl::GetFlag(FLAGS_warmup_clocks);
    o.peer_timeout_ms = absl::GetFlag(FLAGS_peer_timeout_ms);
    return Launch(o);
  }
  const std::string coordinator = absl::GetFlag(FLAGS_coordinator);
  const std::string token_file = absl::GetFlag(FLAGS_token_file);
  if (coordinator.empty()) {
    std::fprintf(stderr, "leeway: say where the coordinator is: --coordinator host:port\n");
    return 2;
  }
  absl::StatusOr<std::string> token = ReadTokenFile(token_file);
  if (!token.ok()) {
    std::fprintf(stderr, "leeway: %s (--token-file)\n", std::string(token.status().message()).c_str());
    return 2;
  }
  auto stub = v1::Admin::NewStub(
      grpc::CreateChannel(coordinator, grpc::InsecureChannelCredentials()));
  const bool read_only = args[0] == "status" || args[0] == "staleness" ||
                         args[0] == "throughput" || args[0] == "layers";
  const int watch = absl::GetFlag(FLAGS_watch);
  for (;;) {
    const int code = Command(*stub, *token, args, output == "json");
    if (code != 0 || watch <= 0 || !read_only) return code;
    std::fflush(stdout);
    absl::SleepFor(absl::Seconds(watch));
    std::printf("\n--- %s\n", absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone()).c_str());
  }
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  // The documented spellings use dashes; Abseil's flags use underscores.
  std::vector<std::string> spelled(argv, argv + argc);
  std::vector<char*> fixed;
  for (std::string& a : spelled) {
    if (a.rfind("--", 0) == 0) {
      const size_t name_end = std::min(a.find('='), a.size());
      for (size_t i = 2; i < name_end; ++i) {
        if (a[i] == '-') a[i] = '_';
      }
    }
    fixed.push_back(a.data());
  }
  absl::SetProgramUsageMessage(leeway::kUsage);
  std::vector<char*> rest =
      leeway::InitMain(static_cast<int>(fixed.size()), fixed.data(),
                       {"coordinator", "token_file"});
  return leeway::Main(std::vector<std::string>(rest.begin() + 1, rest.end()));
}
