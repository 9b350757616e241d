// CUDA runtime queries, compiled by nvcc (only where the toolkit exists).
// Plain types at this boundary so that host code needs no CUDA headers.
// Never aborts: a missing driver or device comes back as `error`.
#ifndef LEEWAY_KERNELS_CUDA_DEVICE_QUERY_H_
#define LEEWAY_KERNELS_CUDA_DEVICE_QUERY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/gpu_device.h"

namespace leeway {

struct CudaDeviceQuery {
  std::vector<GpuDevice> devices;
  std::string error;  // e.g. "CUDA driver version is insufficient ..."
};

CudaDeviceQuery QueryCudaDevices();

// Runs a trivial kernel on `device` and checks its result: proves the
// device code was built for this GPU. Returns an empty string on success.
std::string CudaSelfTest(int device);

}  // namespace leeway

#endif  // LEEWAY_KERNELS_CUDA_DEVICE_QUERY_H_
