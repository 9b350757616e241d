// leeway-worker: trains the MNIST MLP through Leeway's parameter servers.
// It registers with the coordinator, declares the model's tensors, reads
// its own shard of the training set, and for --clocks clocks pulls the
// parameters (earliest layer first), computes a batch's gradients with
// OpenBLAS, pushes each tensor's gradient as soon as backward produces it,
// and ends the clock. Every --log_every clocks it prints the loss, the test
// accuracy (rank 0, or every rank with --eval_all), throughput and
// communication figures. At the end every worker evaluates the final model
// and writes a JSON summary to --result_file.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/common/health_server.h"
#include "core/common/logging.h"
#include "core/common/main_init.h"
#include "core/common/token_file.h"
#include "kernels/codec_cuda.h"
#include "kernels/gpu.h"
#include "worker/mnist.h"
#include "worker/mnist_model.h"
#include "worker/profile_model.h"
#include "worker/profile_trainer.h"
#include "worker/progress.h"
#include "worker/worker.h"

extern "C" void openblas_set_num_threads(int);

ABSL_FLAG(std::string, coordinator, "127.0.0.1:7100", "coordinator host:port");
ABSL_FLAG(std::string, token_file, "", "file holding the cluster token");
ABSL_FLAG(uint64_t, job_id, 1, "job id (must match the coordinator's)");
ABSL_FLAG(int, rank, -1, "ask for this rank (-1: the coordinator assigns one)");
ABSL_FLAG(std::string, advertise_host, "127.0.0.1", "this worker's host name");
ABSL_FLAG(std::string, connect, "address",
          "reach servers by UCP worker address (shared memory when co-located) or sockaddr");
ABSL_FLAG(std::string, data_dir, "data/mnist", "directory with the MNIST IDX files");
ABSL_FLAG(std::string, hidden, "128", "hidden layer widths, comma-separated");
ABSL_FLAG(int, batch, 32, "samples per iteration");
ABSL_FLAG(int, clocks, 500, "iterations to run");
ABSL_FLAG(float, learning_rate, 0.05f, "the servers' SGD learning rate");
ABSL_FLAG(float, weight_decay, 0.0f, "the servers' L2 weight decay");
ABSL_FLAG(float, momentum, 0.9f, "momentum correction on compressed layers");
ABSL_FLAG(uint64_t, seed, 1, "initial weights and data order");
ABSL_FLAG(int, log_every, 50, "clocks between progress lines");
ABSL_FLAG(int, warmup_clocks, 0,
          "first clocks left out of samples/s, comm share and bytes (the dense first pull)");
ABSL_FLAG(bool, eval_all, false, "every rank evaluates the test set when logging");
ABSL_FLAG(int, report_every, 10, "clocks between statistics reports");
ABSL_FLAG(int, blas_threads, 1, "OpenBLAS threads");
ABSL_FLAG(std::string, profile, "",
          "communication study: gpt2-small, bert-base, resnet50 or resnet50-fused-norms "
          "tensors with emulated compute instead of the MNIST MLP");
ABSL_FLAG(double, gpu_ms, 100, "--profile: forward + backward milliseconds per iteration");
ABSL_FLAG(double, slowdown, 1, "--profile: this worker's GPU time factor (stragglers)");
ABSL_FLAG(double, jitter, 0, "--profile: per-iteration GPU time jitter, e.g. 0.3 for +-30%");
ABSL_FLAG(bool, overlap, true,
          "push each layer as its backward finishes (false: after the whole backward, "
          "and with --profile all pulls before the forward; the ablation)");
ABSL_FLAG(std::string, gradients, "host",
          "where gradients and parameters live: host, or device (GPU memory: the MLP on "
          "cuBLAS, compression on the GPU, only payloads cross to the host)");
ABSL_FLAG(int, push_batch_kib, 64,
          "small chunk pushes travel together in messages of up to this many KiB (0: off)");
ABSL_FLAG(int, pull_batch_kib, 4096,
          "pulls of one clock travel together in messages whose replies should take up to this "
          "many KiB (each chunk's last reply; 16 MiB as fp32 at most; 0: off)");
ABSL_FLAG(int, peer_timeout_ms, 3000,
          "a server connection silent this long is lost (raise it on saturated slow links, "
          "where keepalives queue behind bulk transfers)");
ABSL_FLAG(int, server_wait, 120,
          "seconds to wait for a lost server to come back before giving up");
ABSL_FLAG(std::string, result_file, "", "write the final JSON summary here");
ABSL_FLAG(std::string, ready_file, "",
          "write this worker's UCP worker address here (port 0, then the "
          "address in hex, as servers do) whenever it makes a data plane");
ABSL_FLAG(int, health_port, -1,
          "gRPC health service port for probes (0: any, -1: off); ready once registered");
ABSL_FLAG(std::string, history_file, "",
          "append seconds,clock,loss,test_accuracy lines here when logging");

namespace leeway {
namespace {

std::atomic<bool> g_stop{false};
std::unique_ptr<HealthServer> g_health;

absl::StatusOr<std::vector<int>> Widths(const std::string& hidden) {
  std::vector<int> widths = {28 * 28};
  for (absl::string_view part : absl::StrSplit(hidden, ',', absl::SkipEmpty())) {
    int w = 0;
    if (!absl::SimpleAtoi(part, &w) || w <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("bad --hidden width '", part, "'"));
    }
    widths.push_back(w);
  }
  widths.push_back(10);
  return widths;
}

// A batch of the shard, in an order reshuffled every epoch.
class BatchSampler {
 public:
  BatchSampler(const Dataset& data, uint64_t seed) : data_(data), rng_(seed) {
    order_.resize(data.count);
    std::iota(order_.begin(), order_.end(), 0);
    std::shuffle(order_.begin(), order_.end(), rng_);
  }
  void Next(int batch, std::vector<float>* x, std::vector<uint8_t>* labels) {
    x->clear();
    labels->clear();
    for (int i = 0; i < batch; ++i) {
      if (next_ == order_.size()) {
        std::shuffle(order_.begin(), order_.end(), rng_);
        next_ = 0;
      }
      const size_t s = order_[next_++];
      x->insert(x->end(), data_.images.begin() + s * data_.features,
                data_.images.begin() + (s + 1) * data_.features);
      labels->push_back(data_.labels[s]);
    }
  }

 private:
  const Dataset& data_;
  std::mt19937_64 rng_;
  std::vector<size_t> order_;
  size_t next_ = 0;
};

absl::Status PullAll(Worker& worker, MnistModel& mlp) {
  std::vector<Ticket> pulls;
  for (size_t t = 0; t < mlp.tensors().size(); ++t) pulls.push_back(mlp.Pull(worker, t));
  for (const Ticket& p : pulls) {
    absl::Status s = worker.Wait(p);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

int Fail(const absl::Status& status, const std::string& what) {
  std::fprintf(stderr, "leeway-worker: %s: %s\n", what.c_str(), status.ToString().c_str());
  return 1;
}

// --gradients: whether they live in device memory; an error where that
// cannot be, before anything connects.
absl::StatusOr<bool> DeviceGradients() {
  const std::string gradients = absl::GetFlag(FLAGS_gradients);
  if (gradients != "host" && gradients != "device") {
    return absl::InvalidArgumentError("--gradients is host or device, not " + gradients);
  }
  if (gradients == "device" && !DeviceCodecsAvailable()) {
    return absl::FailedPreconditionError(
        "--gradients=device needs a CUDA build and a usable GPU: " + Gpus().reason);
  }
  return gradients == "device";
}

absl::StatusOr<std::unique_ptr<Worker>> ConnectWorker() {
  WorkerOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
    if (!token.ok()) return token.status();
    options.token = *token;
  }
  options.job_id = absl::GetFlag(FLAGS_job_id);
  options.host = absl::GetFlag(FLAGS_advertise_host);
  options.connect = absl::GetFlag(FLAGS_connect);
  options.ready_file = absl::GetFlag(FLAGS_ready_file);
  if (absl::GetFlag(FLAGS_rank) >= 0) options.rank = absl::GetFlag(FLAGS_rank);
  options.momentum = absl::GetFlag(FLAGS_momentum);
  // Both models' parameter buffers are written by pulls alone.
  options.pull_changes_only = true;
  options.report_every = absl::GetFlag(FLAGS_report_every);
  const int batch_kib = absl::GetFlag(FLAGS_push_batch_kib);
  if (batch_kib < 0 || batch_kib > (16 << 10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--push_batch_kib is 0 to 16384, not ", batch_kib));
  }
  options.push_batch_bytes = static_cast<size_t>(batch_kib) << 10;
  const int pull_batch_kib = absl::GetFlag(FLAGS_pull_batch_kib);
  if (pull_batch_kib < 0 || pull_batch_kib > (16 << 10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pull_batch_kib is 0 to 16384, not ", pull_batch_kib));
  }
  options.pull_batch_bytes = static_cast<size_t>(pull_batch_kib) << 10;
  options.server_recovery_timeout = absl::Seconds(absl::GetFlag(FLAGS_server_wait));
  options.peer_timeout = absl::Milliseconds(std::max(100, absl::GetFlag(FLAGS_peer_timeout_ms)));
  absl::StatusOr<std::unique_ptr<Worker>> worker = Worker::Connect(options);
  if (worker.ok() && g_health != nullptr) g_health->SetReady(true);
  return worker;
}

std::unique_ptr<Progress> MakeProgress(const Worker& worker) {
  return std::make_unique<Progress>(worker.rank(), absl::GetFlag(FLAGS_clocks),
                                    absl::GetFlag(FLAGS_log_every),
                                    absl::GetFlag(FLAGS_history_file),
                                    absl::GetFlag(FLAGS_warmup_clocks));
}

int Finish(const std::string& summary) {
  std::printf("RESULT %s\n", summary.c_str());
  std::fflush(stdout);
  if (!absl::GetFlag(FLAGS_result_file).empty()) {
    std::ofstream out(absl::GetFlag(FLAGS_result_file));
    out << summary << "\n";
    if (!out) return Fail(absl::InternalError("write failed"), "result file");
  }
  return g_stop ? 130 : 0;
}

int TrainProfile() {
  ProfileOptions o;
  o.model = absl::GetFlag(FLAGS_profile);
  o.gpu_ms = absl::GetFlag(FLAGS_gpu_ms);
  o.batch = static_cast<uint32_t>(std::max(1, absl::GetFlag(FLAGS_batch)));
  o.slowdown = absl::GetFlag(FLAGS_slowdown);
  o.jitter = absl::GetFlag(FLAGS_jitter);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.clocks = absl::GetFlag(FLAGS_clocks);
  o.learning_rate = absl::GetFlag(FLAGS_learning_rate);
  o.overlap = absl::GetFlag(FLAGS_overlap);
  absl::StatusOr<bool> device = DeviceGradients();
  if (!device.ok()) return Fail(device.status(), "--gradients");
  o.device_memory = *device;
  absl::Status known = ProfileModel(o.model).status();
  if (!known.ok()) return Fail(known, "--profile");
  if (o.gpu_ms < 0 || o.slowdown <= 0 || o.jitter < 0 || o.jitter >= 1) {
    return Fail(absl::InvalidArgumentError("need --gpu_ms >= 0, --slowdown > 0, 0 <= --jitter < 1"),
                "--profile");
  }
  absl::StatusOr<std::unique_ptr<Worker>> worker = ConnectWorker();
  if (!worker.ok()) return Fail(worker.status(), "connect");
  std::unique_ptr<Progress> progress = MakeProgress(**worker);
  absl::Status ran = RunProfile(**worker, o, *progress, g_stop);
  if (!ran.ok()) return Fail(ran, "profile " + o.model);
  return Finish(progress->Result(-1, 0));
}

int TrainMnist() {
  openblas_set_num_threads(std::max(1, absl::GetFlag(FLAGS_blas_threads)));
  absl::StatusOr<std::vector<int>> widths = Widths(absl::GetFlag(FLAGS_hidden));
  if (!widths.ok()) return Fail(widths.status(), "model");
  absl::StatusOr<bool> device = DeviceGradients();
  if (!device.ok()) return Fail(device.status(), "--gradients");
  absl::StatusOr<std::unique_ptr<MnistModel>> mlp = MnistModel::Create(*widths, *device);
  if (!mlp.ok()) return Fail(mlp.status(), "model");
  absl::StatusOr<Dataset> train = ReadMnist(absl::GetFlag(FLAGS_data_dir), true);
  if (!train.ok()) return Fail(train.status(), "training data (deploy/fetch-mnist.sh makes it)");
  absl::StatusOr<Dataset> test = ReadMnist(absl::GetFlag(FLAGS_data_dir), false);
  if (!test.ok()) return Fail(test.status(), "test data");
  absl::StatusOr<std::unique_ptr<Worker>> connected = ConnectWorker();
  if (!connected.ok()) return Fail(connected.status(), "connect");
  Worker& worker = **connected;

  MnistModel& model = **mlp;
  absl::Status initialized = model.Initialize(absl::GetFlag(FLAGS_seed));
  if (!initialized.ok()) return Fail(initialized, "model");
  std::vector<LayerDefinition> layers;
  for (size_t t = 0; t < model.tensors().size(); ++t) {
    LayerDefinition def;
    def.name = model.tensors()[t].name;
    def.shape = model.tensors()[t].shape;
    def.initial.assign(model.initial(t).begin(), model.initial(t).end());
    def.optimizer.set_kind(v1::OptimizerSpec::KIND_SGD);
    def.optimizer.set_learning_rate(absl::GetFlag(FLAGS_learning_rate));
    def.optimizer.set_weight_decay(absl::GetFlag(FLAGS_weight_decay));
    layers.push_back(std::move(def));
  }
  absl::Status registered = worker.RegisterLayers(layers);
  if (!registered.ok()) return Fail(registered, "register layers");

  const uint32_t rank = worker.rank();
  const uint32_t workers = std::max<uint32_t>(1, worker.expected_workers());
  const Dataset shard = train->Shard(rank % workers, workers);
  BatchSampler sampler(shard, absl::GetFlag(FLAGS_seed) * 7919 + rank);
  std::printf("worker %u: %zu training samples (shard %u of %u), %zu test, staleness %s\n",
              rank, shard.count, rank % workers, workers, test->count,
              worker.staleness() < 0 ? "async" : absl::StrCat(worker.staleness()).c_str());
  std::fflush(stdout);

  const int clocks = absl::GetFlag(FLAGS_clocks);
  const int batch = absl::GetFlag(FLAGS_batch);
  const bool evaluates = rank == 0 || absl::GetFlag(FLAGS_eval_all);
  const bool overlap = absl::GetFlag(FLAGS_overlap);
  std::unique_ptr<Progress> progress = MakeProgress(worker);
  std::vector<float> x;
  std::vector<uint8_t> labels;
  while (static_cast<int>(worker.clock()) < clocks && !g_stop && !worker.stop_requested()) {
    absl::Status pulled = PullAll(worker, model);
    if (!pulled.ok()) return Fail(pulled, absl::StrCat("pull at clock ", worker.clock()));
    sampler.Next(batch, &x, &labels);
    std::vector<size_t> held;  // without overlap
    absl::StatusOr<double> loss = model.Train(x, labels, [&](size_t t) {
      if (overlap) {
        model.Push(worker, t);
      } else {
        held.push_back(t);  // the model keeps its gradients until the next Train
      }
    });
    if (!loss.ok()) return Fail(loss.status(), "train");
    for (size_t t : held) model.Push(worker, t);
    IterationInfo info{*loss, static_cast<uint32_t>(batch), model.last_backward_ms()};
    absl::Status clocked = worker.Clock(info);
    if (!clocked.ok()) return Fail(clocked, absl::StrCat("clock ", worker.clock()));
    progress->Iteration(worker.last_iteration(), *loss, static_cast<uint32_t>(batch));
    if (progress->Due(worker.clock())) {
      const double accuracy =
          evaluates ? model.Accuracy(test->images, test->labels).value_or(-1) : -1;
      progress->Log(worker.clock(), accuracy, worker.PlanSummary());
    }
  }
  // The final model: with SSP, advance past the bound without pushing so
  // that the last pull holds every worker's updates.
  if (worker.staleness() >= 0) {
    for (int32_t i = 0; i < worker.staleness() && !g_stop; ++i) {
      absl::Status clocked = worker.Clock(IterationInfo{});
      if (!clocked.ok()) return Fail(clocked, "final clocks");
    }
  }
  absl::Status pulled = PullAll(worker, model);
  if (!pulled.ok()) return Fail(pulled, "final pull");
  const double accuracy = model.Accuracy(test->images, test->labels).value_or(0);
  const double test_loss = model.Loss(test->images, test->labels).value_or(0);
  return Finish(progress->Result(accuracy, test_loss));
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  leeway::InitMain(argc, argv);
  signal(SIGINT, [](int) { leeway::g_stop = 1; });
  signal(SIGTERM, [](int) { leeway::g_stop = 1; });
  if (absl::GetFlag(FLAGS_health_port) >= 0) {
    absl::StatusOr<std::unique_ptr<leeway::HealthServer>> health = leeway::HealthServer::Start(
        absl::StrCat("0.0.0.0:", absl::GetFlag(FLAGS_health_port)));
    if (!health.ok()) return leeway::Fail(health.status(), "--health_port");
    leeway::g_health = std::move(*health);
  }
  const int code =
      absl::GetFlag(FLAGS_profile).empty() ? leeway::TrainMnist() : leeway::TrainProfile();
  leeway::g_health.reset();
  return code;
}
