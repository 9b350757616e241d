#include "worker/profile_trainer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/counter_random.h"
#include "worker/profile_model.h"

namespace leeway {
namespace {

// The emulated GPU: layers run one after another, each starting when its
// input is there and the previous layer is done; sleeping until a layer's
// end on the wall clock keeps sleep overshoot from adding up.
class EmulatedGpu {
 public:
  void Run(double ms) {
    busy_until_ = std::max(busy_until_, absl::Now()) + absl::Microseconds(ms * 1000);
    const absl::Duration left = busy_until_ - absl::Now();
    if (left > absl::ZeroDuration()) absl::SleepFor(left);
  }

 private:
  absl::Time busy_until_ = absl::InfinitePast();
};

}  // namespace

absl::Status RunProfile(Worker& worker, const ProfileOptions& o, Progress& progress,
                        const std::atomic<bool>& stop) {
  absl::StatusOr<std::vector<ProfileTensor>> tensors = ProfileModel(o.model);
  if (!tensors.ok()) return tensors.status();
  const size_t n = tensors->size();
  double total_cost = 0;
  uint64_t largest = 0;
  for (const ProfileTensor& t : *tensors) {
    total_cost += t.cost;
    largest = std::max(largest, t.elements());
  }
  std::vector<std::vector<float>> params(n);
  {
    std::vector<LayerDefinition> layers(n);
    for (size_t i = 0; i < n; ++i) {
      layers[i].name = (*tensors)[i].name;
      layers[i].shape = (*tensors)[i].shape;
      layers[i].initial.assign((*tensors)[i].elements(), 0.0f);
      layers[i].optimizer.set_kind(v1::OptimizerSpec::KIND_SGD);
      layers[i].optimizer.set_learning_rate(o.learning_rate);
      params[i].resize((*tensors)[i].elements());
    }
    absl::Status registered = worker.RegisterLayers(layers);
    if (!registered.ok()) return registered;
  }
  const GradientPool pool(largest, o.seed * 0x9E3779B97F4A7C15ull + worker.rank());
  const uint64_t rank_seed = (o.seed << 20) ^ worker.rank();
  std::vector<Ticket> pulls(n);
  while (static_cast<int>(worker.clock()) < o.clocks && !stop && !worker.stop_requested()) {
    const uint32_t clock = worker.clock();
    const double jitter = o.jitter * (2 * CounterUniform(rank_seed, clock) - 1);
    const double gpu_ms = o.gpu_ms * o.slowdown * (1 + jitter);
    EmulatedGpu gpu;
    for (size_t i = 0; i < n; ++i) pulls[i] = worker.Pull(static_cast<uint32_t>(i), absl::MakeSpan(params[i]));
    // Without overlap every pull is in before the first layer computes.
    for (size_t i = 0; i < n; ++i) {
      absl::Status pulled = worker.Wait(pulls[i]);
      if (!pulled.ok()) {
        return absl::Status(pulled.code(), absl::StrCat("pull of ", (*tensors)[i].name,
                                                        " at clock ", clock, ": ",
                                                        pulled.message()));
      }
      if (o.overlap) gpu.Run(gpu_ms / 3 * (*tensors)[i].cost / total_cost);
    }
    if (!o.overlap) gpu.Run(gpu_ms / 3);
    const absl::Time backward_start = absl::Now();
    auto push = [&](size_t i) {
      const uint64_t key = rank_seed ^ (uint64_t{clock} << 24) ^ i;
      worker.Push(static_cast<uint32_t>(i), pool.Draw((*tensors)[i].elements(), key));
    };
    for (size_t i = n; i-- > 0;) {
      gpu.Run(gpu_ms * 2 / 3 * (*tensors)[i].cost / total_cost);
      if (o.overlap) push(i);
    }
    if (!o.overlap) {
      for (size_t i = n; i-- > 0;) push(i);
    }
    const double backward_ms = absl::ToDoubleMilliseconds(absl::Now() - backward_start);
    absl::Status clocked = worker.Clock(IterationInfo{0, o.batch, backward_ms});
    if (!clocked.ok()) {
      return absl::Status(clocked.code(),
                          absl::StrCat("clock ", clock, ": ", clocked.message()));
    }
    progress.Iteration(worker.last_iteration(), 0, o.batch);
    if (progress.Due(worker.clock())) progress.Log(worker.clock(), -1, worker.PlanSummary());
  }
  return absl::OkStatus();
}

}  // namespace leeway
