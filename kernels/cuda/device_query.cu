#include <cuda_runtime.h>

#include <string>

#include "kernels/cuda/device_query.h"

namespace leeway {
namespace {

std::string Describe(cudaError_t err, const char* what) {
  return std::string(what) + ": " + cudaGetErrorString(err);
}

__global__ void Iota(int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = i * 3;
}

}  // namespace

CudaDeviceQuery QueryCudaDevices() {
  CudaDeviceQuery query;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    query.error = Describe(err, "cudaGetDeviceCount");
    return query;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop;
    err = cudaGetDeviceProperties(&prop, i);
    if (err != cudaSuccess) {
      query.error = Describe(err, "cudaGetDeviceProperties");
      query.devices.clear();
      return query;
    }
    GpuDevice info;
    info.index = i;
    info.name = prop.name;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.memory_bytes = prop.totalGlobalMem;
    query.devices.push_back(info);
  }
  return query;
}

std::string CudaSelfTest(int device) {
  cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) return Describe(err, "cudaSetDevice");
  constexpr int kN = 1000;
  int* d = nullptr;
  err = cudaMalloc(&d, kN * sizeof(int));
  if (err != cudaSuccess) return Describe(err, "cudaMalloc");
  Iota<<<(kN + 255) / 256, 256>>>(d, kN);
  int host[kN];
  err = cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost);
  cudaFree(d);
  if (err != cudaSuccess) return Describe(err, "kernel or copy");
  for (int i = 0; i < kN; ++i) {
    if (host[i] != i * 3) return "kernel computed a wrong value";
  }
  return "";
}

}  // namespace leeway
