// Kernels of sparse_input_kernels.h.
#include "kernels/cuda/sparse_input_kernels.h"

#include <cuda_runtime.h>

#include <climits>
#include <cub/cub.cuh>

#include "kernels/cuda/launch.cuh"
#include "kernels/half.h"

namespace leeway {
namespace cuda {
namespace {

struct CheckTotals {
  double gradient;
  double v;
  unsigned long long first_bad;
};

__device__ inline float Corrected(float momentum, const float* velocity, const float* g, size_t i) {
  return velocity != nullptr ? momentum * velocity[i] + g[i] : g[i];
}

__global__ void CheckKernel(float momentum, const float* velocity, const float* g, const float* r,
                            size_t n, CheckTotals* totals) {
  double gradient = 0;
  double v_sum = 0;
  unsigned long long first_bad = ULLONG_MAX;
  LEEWAY_GRID_STRIDE(i, n) {
    const float u = Corrected(momentum, velocity, g, i);
    const float v = r != nullptr ? r[i] + u : u;
    if (MagnitudeKey(v) >= 0x7F800000u && i < first_bad) first_bad = i;
    gradient += static_cast<double>(g[i]) * g[i];
    v_sum += static_cast<double>(v) * v;
  }
  using Reduce = cub::BlockReduce<double, launch::kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const double block_gradient = Reduce(storage).Sum(gradient);
  __syncthreads();
  const double block_v = Reduce(storage).Sum(v_sum);
  if (threadIdx.x == 0) {
    atomicAdd(&totals->gradient, block_gradient);
    atomicAdd(&totals->v, block_v);
  }
  if (first_bad != ULLONG_MAX) atomicMin(&totals->first_bad, first_bad);
}

__global__ void WriteKernel(float momentum, float* velocity, const float* g, float* r, size_t n) {
  LEEWAY_GRID_STRIDE(i, n) {
    const float u = Corrected(momentum, velocity, g, i);
    if (velocity != nullptr) velocity[i] = u;
    r[i] = r[i] + u;
  }
}

__global__ void ZeroAtKernel(float* x, const uint32_t* indices, size_t k) {
  LEEWAY_GRID_STRIDE(j, k) { x[indices[j]] = 0.0f; }
}

}  // namespace

int CheckSparseInput(float momentum, const float* velocity, const float* g,
                     const float* r, size_t n, void* stream, InputCheck* host_out) {
  CheckTotals totals = {0.0, 0.0, ULLONG_MAX};
  if (n > 0) {
    const int error = launch::WithTotals(&totals, stream, [&](CheckTotals* device) {
      return launch::Over(n, stream, CheckKernel, momentum, velocity, g, r, n, device);
    });
    if (error != 0) return error;
  }
  host_out->finite = totals.first_bad == ULLONG_MAX;
  host_out->first_bad = host_out->finite ? 0 : totals.first_bad;
  host_out->gradient = totals.gradient;
  host_out->v = totals.v;
  return 0;
}

int WriteSparseInput(float momentum, float* velocity, const float* g, float* r,
                     size_t n, void* stream) {
  if (n == 0) return 0;
  return launch::Over(n, stream, WriteKernel, momentum, velocity, g, r, n);
}

int ZeroAt(float* x, const uint32_t* indices, size_t k, void* stream) {
  if (k == 0) return 0;
  return launch::Over(k, stream, ZeroAtKernel, x, indices, k);
}

int Zero(float* x, size_t n, void* stream) {
  if (n == 0) return 0;
  return static_cast<int>(cudaMemsetAsync(x, 0, sizeof(float) * n, launch::S(stream)));
}

}  // namespace cuda
}  // namespace leeway
