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
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/common/logging.h"
#include "core/common/main_init.h"
#include "core/common/token_file.h"
#include "worker/mlp.h"
#include "worker/mnist.h"
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
ABSL_FLAG(bool, eval_all, false, "every rank evaluates the test set when logging");
ABSL_FLAG(int, report_every, 10, "clocks between statistics reports");
ABSL_FLAG(int, blas_threads, 1, "OpenBLAS threads");
ABSL_FLAG(std::string, result_file, "", "write the final JSON summary here");
ABSL_FLAG(std::string, history_file, "",
          "append seconds,clock,loss,test_accuracy lines here when logging");

namespace leeway {
namespace {

const std::vector<FlagEnv> kEnvironment = {
    {"coordinator", "LEEWAY_COORDINATOR"}, {"token_file", "LEEWAY_TOKEN_FILE"},
    {"job_id", "LEEWAY_JOB_ID"},           {"rank", "LEEWAY_RANK"},
    {"advertise_host", "LEEWAY_ADVERTISE_HOST"}, {"data_dir", "LEEWAY_DATA_DIR"},
};

volatile sig_atomic_t g_stop = 0;

// Totals over the run, for the summary.
struct RunTotals {
  double iteration_ms = 0, comm_ms = 0;
  uint64_t bytes = 0, dense_bytes = 0, push_bytes = 0, samples = 0;
  int iterations = 0;
};

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

absl::Status PullAll(Worker& worker, Mlp& mlp) {
  std::vector<Ticket> pulls;
  for (size_t t = 0; t < mlp.tensors().size(); ++t) pulls.push_back(worker.Pull(t, mlp.params(t)));
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

int Run() {
  openblas_set_num_threads(std::max(1, absl::GetFlag(FLAGS_blas_threads)));
  absl::StatusOr<std::vector<int>> widths = Widths(absl::GetFlag(FLAGS_hidden));
  if (!widths.ok()) return Fail(widths.status(), "model");
  absl::StatusOr<Mlp> mlp = Mlp::Create(*widths);
  if (!mlp.ok()) return Fail(mlp.status(), "model");
  absl::StatusOr<Dataset> train = ReadMnist(absl::GetFlag(FLAGS_data_dir), true);
  if (!train.ok()) return Fail(train.status(), "training data (deploy/fetch-mnist.sh makes it)");
  absl::StatusOr<Dataset> test = ReadMnist(absl::GetFlag(FLAGS_data_dir), false);
  if (!test.ok()) return Fail(test.status(), "test data");

  WorkerOptions options;
  options.coordinator = absl::GetFlag(FLAGS_coordinator);
  if (!absl::GetFlag(FLAGS_token_file).empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(absl::GetFlag(FLAGS_token_file));
    if (!token.ok()) return Fail(token.status(), "token");
    options.token = *token;
  }
  options.job_id = absl::GetFlag(FLAGS_job_id);
  options.host = absl::GetFlag(FLAGS_advertise_host);
  options.connect = absl::GetFlag(FLAGS_connect);
  if (absl::GetFlag(FLAGS_rank) >= 0) options.rank = absl::GetFlag(FLAGS_rank);
  options.momentum = absl::GetFlag(FLAGS_momentum);
  options.report_every = absl::GetFlag(FLAGS_report_every);
  absl::StatusOr<std::unique_ptr<Worker>> connected = Worker::Connect(options);
  if (!connected.ok()) return Fail(connected.status(), "connect");
  Worker& worker = **connected;

  mlp->Initialize(absl::GetFlag(FLAGS_seed));
  std::vector<LayerDefinition> layers;
  for (size_t t = 0; t < mlp->tensors().size(); ++t) {
    LayerDefinition def;
    def.name = mlp->tensors()[t].name;
    def.shape = mlp->tensors()[t].shape;
    def.initial.assign(mlp->params(t).begin(), mlp->params(t).end());
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

  std::ofstream history;
  if (!absl::GetFlag(FLAGS_history_file).empty()) {
    history.open(absl::GetFlag(FLAGS_history_file), std::ios::app);
  }
  const int clocks = absl::GetFlag(FLAGS_clocks);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int log_every = std::max(1, absl::GetFlag(FLAGS_log_every));
  const bool evaluates = rank == 0 || absl::GetFlag(FLAGS_eval_all);
  const absl::Time start = absl::Now();
  RunTotals totals;
  std::vector<float> x;
  std::vector<uint8_t> labels;
  double window_loss = 0;
  int window = 0;
  while (static_cast<int>(worker.clock()) < clocks && !g_stop && !worker.stop_requested()) {
    absl::Status pulled = PullAll(worker, *mlp);
    if (!pulled.ok()) return Fail(pulled, absl::StrCat("pull at clock ", worker.clock()));
    sampler.Next(batch, &x, &labels);
    absl::StatusOr<double> loss = mlp->Train(x, labels, [&](size_t t, absl::Span<const float> g) {
      worker.Push(static_cast<uint32_t>(t), g);
    });
    if (!loss.ok()) return Fail(loss.status(), "train");
    IterationInfo info{*loss, static_cast<uint32_t>(batch), mlp->last_backward_ms()};
    absl::Status clocked = worker.Clock(info);
    if (!clocked.ok()) return Fail(clocked, absl::StrCat("clock ", worker.clock()));
    const IterationStats& it = worker.last_iteration();
    totals.iteration_ms += it.iteration_ms;
    totals.comm_ms += it.pull_wait_ms + it.push_wait_ms;
    totals.bytes += it.bytes_sent + it.bytes_received;
    totals.dense_bytes += it.dense_bytes;
    totals.push_bytes += it.push_bytes;
    totals.samples += batch;
    ++totals.iterations;
    window_loss += *loss;
    ++window;
    if (static_cast<int>(worker.clock()) % log_every == 0 ||
        static_cast<int>(worker.clock()) == clocks) {
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      std::string accuracy = "-";
      double acc = -1;
      if (evaluates) {
        acc = mlp->Accuracy(test->images, test->labels).value_or(-1);
        accuracy = absl::StrFormat("%.4f", acc);
      }
      std::printf(
          "worker %u clock %u loss %.4f test_accuracy %s samples/s %.0f comm_share %.3f "
          "bytes/iter %.0f compression %.1fx %s\n",
          rank, worker.clock(), window_loss / window, accuracy.c_str(),
          totals.samples / (totals.iteration_ms / 1000), totals.comm_ms / totals.iteration_ms,
          double(totals.bytes) / totals.iterations,
          totals.push_bytes > 0 ? double(totals.dense_bytes) / totals.push_bytes : 1.0,
          worker.PlanSummary().c_str());
      std::fflush(stdout);
      if (history.is_open()) {
        history << absl::StrFormat("%.3f,%u,%.5f,%.5f\n", seconds, worker.clock(),
                                   window_loss / window, acc);
        history.flush();
      }
      window_loss = 0;
      window = 0;
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
  absl::Status pulled = PullAll(worker, *mlp);
  if (!pulled.ok()) return Fail(pulled, "final pull");
  const double accuracy = mlp->Accuracy(test->images, test->labels).value_or(0);
  const double test_loss = mlp->Loss(test->images, test->labels).value_or(0);
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const std::string summary = absl::StrFormat(
      "{\"rank\": %u, \"clocks\": %d, \"test_accuracy\": %.5f, \"test_loss\": %.5f, "
      "\"samples_per_sec\": %.2f, \"comm_share\": %.5f, \"bytes_per_iter\": %.1f, "
      "\"compression_ratio\": %.3f, \"seconds\": %.3f}",
      rank, totals.iterations, accuracy, test_loss,
      totals.iteration_ms > 0 ? totals.samples / (totals.iteration_ms / 1000) : 0.0,
      totals.iteration_ms > 0 ? totals.comm_ms / totals.iteration_ms : 0.0,
      totals.iterations > 0 ? double(totals.bytes) / totals.iterations : 0.0,
      totals.push_bytes > 0 ? double(totals.dense_bytes) / totals.push_bytes : 1.0, seconds);
  std::printf("RESULT %s\n", summary.c_str());
  std::fflush(stdout);
  if (!absl::GetFlag(FLAGS_result_file).empty()) {
    std::ofstream out(absl::GetFlag(FLAGS_result_file));
    out << summary << "\n";
    if (!out) return Fail(absl::InternalError("write failed"), "result file");
  }
  return g_stop ? 130 : 0;
}

}  // namespace
}  // namespace leeway

int main(int argc, char** argv) {
  leeway::InitMain(argc, argv, leeway::kEnvironment);
  signal(SIGINT, [](int) { leeway::g_stop = 1; });
  signal(SIGTERM, [](int) { leeway::g_stop = 1; });
  return leeway::Run();
}
