// The --profile training loop of leeway-worker: a communication study's
// worker. It registers the tensors of a real model (profile_model.h),
// pulls them in forward order and "computes" each layer by sleeping its
// share of `gpu_ms` once its parameters have arrived, then, in backward
// order, sleeps each layer's share and pushes a heavy-tailed gradient
// for it - exactly the overlap a GPU worker has, with the network doing
// the real work. Stragglers: every iteration's GPU time is multiplied by
// `slowdown` and by a seeded factor in [1 - jitter, 1 + jitter]. With
// `device_memory` the gradients and parameters live on the GPU (the
// heavy-tailed pool uploaded once) and every push and pull goes through
// the worker's device calls on a stream of the trainer's own.
#ifndef LEEWAY_WORKER_PROFILE_TRAINER_H_
#define LEEWAY_WORKER_PROFILE_TRAINER_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "worker/progress.h"
#include "worker/worker.h"

namespace leeway {

struct ProfileOptions {
  std::string model;     // profile_model.h's names
  double gpu_ms = 100;   // forward + backward of one iteration on the GPU
  uint32_t batch = 32;   // samples an iteration stands for
  double slowdown = 1;
  double jitter = 0;     // 0.3: +-30%
  uint64_t seed = 1;
  int clocks = 100;
  float learning_rate = 0.01f;
  // false: no overlap (the ablation) - every pull is waited for before the
  // forward pass, and the pushes go out after the whole backward pass.
  bool overlap = true;
  // Gradients and parameters in GPU memory, as a GPU trainer has them:
  // pushes compress on the device (Worker::PushDevice), pulls land there.
  bool device_memory = false;
};

// Registers the profile's layers with `worker`, runs `clocks` iterations
// (fewer if `stop` is set or the coordinator stops the job) and reports
// each through `progress`.
absl::Status RunProfile(Worker& worker, const ProfileOptions& options, Progress& progress,
                        const std::atomic<bool>& stop);

}  // namespace leeway

#endif  // LEEWAY_WORKER_PROFILE_TRAINER_H_
