// GpuDevice: what Leeway knows of one CUDA device. Plain types, shared by
// the nvcc-compiled query (cuda/device_query.cu) and host code (gpu.h).
#ifndef LEEWAY_KERNELS_GPU_DEVICE_H_
#define LEEWAY_KERNELS_GPU_DEVICE_H_

#include <cstddef>
#include <string>

namespace leeway {

struct GpuDevice {
  int index = 0;
  std::string name;
  int compute_major = 0;
  int compute_minor = 0;
  size_t memory_bytes = 0;
};

}  // namespace leeway

#endif  // LEEWAY_KERNELS_GPU_DEVICE_H_
