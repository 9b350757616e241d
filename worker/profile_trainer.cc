#include "worker/profile_trainer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "kernels/counter_random.h"
#include "kernels/device_memory.h"
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

// Where a profile run keeps gradients and parameters: host vectors, or
// device buffers (with the pool uploaded) on a stream of their own. Its
// pushes and pulls read and write them until their tickets are done: the
// destructor waits for the ones still out (a run that stops on an error
// leaves some), and Settled() forgets those an iteration saw done.
class ProfileMemory {
 public:
  ProfileMemory() = default;
  ProfileMemory(ProfileMemory&&) = default;
  ProfileMemory& operator=(ProfileMemory&&) = default;
  ~ProfileMemory() {
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    for (const Ticket& t : out_) t.Wait(deadline).IgnoreError();
  }

  static absl::StatusOr<ProfileMemory> Create(bool device, const std::vector<ProfileTensor>& tensors,
                                              const GradientPool& pool) {
    ProfileMemory m;
    m.pool_ = pool.values();
    if (!device) {
      for (const ProfileTensor& t : tensors) m.host_params_.emplace_back(t.elements());
      return m;
    }
    auto stream = DeviceStream::Create();
    if (!stream.ok()) return stream.status();
    m.stream_ = *std::move(stream);
    absl::StatusOr<DeviceBuffer> uploaded = UploadFloats(m.pool_, m.stream_.get());
    if (!uploaded.ok()) return uploaded.status();
    m.device_pool_ = *std::move(uploaded);
    for (const ProfileTensor& t : tensors) {
      m.device_params_.emplace_back(sizeof(float) * t.elements(), m.stream_.get());
      if (!m.device_params_.back().status().ok()) return m.device_params_.back().status();
    }
    return m;
  }

  Ticket Pull(Worker& worker, uint32_t layer) {
    if (host_params_.empty()) {
      return Out(worker.PullDevice(layer, device_params_[layer].as<float>(), stream_.get()));
    }
    return Out(worker.Pull(layer, absl::MakeSpan(host_params_[layer])));
  }

  // `gradient`: a span the pool drew.
  Ticket Push(Worker& worker, uint32_t layer, absl::Span<const float> gradient) {
    if (host_params_.empty()) {
      const float* at = device_pool_.as<float>() + (gradient.data() - pool_.data());
      return Out(worker.PushDevice(layer, at, stream_.get()));
    }
    return Out(worker.Push(layer, gradient));
  }

  // After a clock that waited for everything it issued.
  void Settled() { out_.clear(); }

 private:
  Ticket Out(Ticket ticket) {
    out_.push_back(ticket);
    return ticket;
  }

  absl::Span<const float> pool_;
  std::vector<std::vector<float>> host_params_;
  // Declared before the buffers: destroyed after them.
  DeviceStream stream_;
  DeviceBuffer device_pool_;
  std::vector<DeviceBuffer> device_params_;
  std::vector<Ticket> out_;  // issued and not seen settled: the destructor waits
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
  {
    std::vector<LayerDefinition> layers(n);
    for (size_t i = 0; i < n; ++i) {
      layers[i].name = (*tensors)[i].name;
      layers[i].shape = (*tensors)[i].shape;
      layers[i].initial.assign((*tensors)[i].elements(), 0.0f);
      layers[i].optimizer.set_kind(v1::OptimizerSpec::KIND_SGD);
      layers[i].optimizer.set_learning_rate(o.learning_rate);
    }
    absl::Status registered = worker.RegisterLayers(layers);
    if (!registered.ok()) return registered;
  }
  const GradientPool pool(largest, o.seed * 0x9E3779B97F4A7C15ull + worker.rank());
  absl::StatusOr<ProfileMemory> memory = ProfileMemory::Create(o.device_memory, *tensors, pool);
  if (!memory.ok()) return memory.status();
  const uint64_t rank_seed = (o.seed << 20) ^ worker.rank();
  std::vector<Ticket> pulls(n);
  while (static_cast<int>(worker.clock()) < o.clocks && !stop && !worker.stop_requested()) {
    const uint32_t clock = worker.clock();
    const double jitter = o.jitter * (2 * CounterUniform(rank_seed, clock) - 1);
    const double gpu_ms = o.gpu_ms * o.slowdown * (1 + jitter);
    EmulatedGpu gpu;
    for (size_t i = 0; i < n; ++i) pulls[i] = memory->Pull(worker, static_cast<uint32_t>(i));
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
      memory->Push(worker, static_cast<uint32_t>(i), pool.Draw((*tensors)[i].elements(), key));
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
    memory->Settled();
    progress.Iteration(worker.last_iteration(), 0, o.batch);
    if (progress.Due(worker.clock())) progress.Log(worker.clock(), -1, worker.PlanSummary());
  }
  return absl::OkStatus();
}

}  // namespace leeway
