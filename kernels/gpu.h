// GPU discovery: which CUDA devices this process can use, decided once at
// run time. Kernels pick their CUDA path only when UsableGpus() > 0 and fall
// back to the CPU path otherwise (no GPU, no driver, or a build without
// CUDA); the reason is logged once.
//
// Thread-safe; the probe runs once per process.
#ifndef LEEWAY_KERNELS_GPU_H_
#define LEEWAY_KERNELS_GPU_H_

#include <string>
#include <vector>

#include "kernels/gpu_device.h"

namespace leeway {

struct GpuInventory {
  bool built_with_cuda = false;
  std::vector<GpuDevice> devices;
  // Why there is no usable GPU (empty when there is one).
  std::string reason;
};

// Probes once (cached) and logs the outcome once.
const GpuInventory& Gpus();
inline int UsableGpus() { return static_cast<int>(Gpus().devices.size()); }

}  // namespace leeway

#endif  // LEEWAY_KERNELS_GPU_H_
