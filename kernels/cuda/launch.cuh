// What every .cu file of kernels/cuda/ launches with: the block size, a
// grid for n elements, the grid-stride loop, the launch's error code, and
// stream-ordered scratch memory. For nvcc only (the functions of
// codec_kernels.h and sparse_input_kernels.h are the host-side API).
#ifndef LEEWAY_KERNELS_CUDA_LAUNCH_CUH_
#define LEEWAY_KERNELS_CUDA_LAUNCH_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

namespace leeway {
namespace cuda {
namespace launch {

constexpr int kThreads = 256;

inline cudaStream_t S(void* stream) { return static_cast<cudaStream_t>(stream); }

// Blocks for n elements, one per kThreads, at most 8192 (grid-stride).
inline int Grid(size_t n) {
  return static_cast<int>(
      std::max<size_t>(1, std::min<size_t>((n + kThreads - 1) / kThreads, 8192)));
}

// The error of the last launch, 0 for none.
inline int Launched() { return static_cast<int>(cudaGetLastError()); }

// kernel<<<Grid(n), kThreads, 0, stream>>>(args...), and its error.
template <typename... Params, typename... Args>
int Over(size_t n, void* stream, void (*kernel)(Params...), Args... args) {
  kernel<<<Grid(n), kThreads, 0, S(stream)>>>(args...);
  return Launched();
}

#define LEEWAY_GRID_STRIDE(i, n)                                          \
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < (n); \
       i += size_t{gridDim.x} * blockDim.x)

// A device allocation released on scope exit (stream-ordered). An error
// already in *error skips the allocation.
class Scratch {
 public:
  Scratch(size_t bytes, void* stream, int* error) : stream_(stream) {
    if (*error == 0 && bytes > 0) {
      *error = static_cast<int>(cudaMallocAsync(&p_, bytes, S(stream)));
    }
  }
  ~Scratch() {
    if (p_ != nullptr) cudaFreeAsync(p_, S(stream_));
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
  void* stream_;
};

// For kernels that add into a small struct of totals: copies *totals to
// the device, runs launch(device_totals) (a launch's error code), copies
// them back into *totals and synchronizes `stream`.
template <typename T, typename Launch>
int WithTotals(T* totals, void* stream, Launch launch) {
  int error = 0;
  Scratch device(sizeof(T), stream, &error);
  if (error != 0) return error;
  const cudaStream_t s = S(stream);
  if ((error = cudaMemcpyAsync(device.as<void>(), totals, sizeof(T), cudaMemcpyHostToDevice, s)) ||
      (error = launch(device.as<T>())) ||
      (error = cudaMemcpyAsync(totals, device.as<void>(), sizeof(T), cudaMemcpyDeviceToHost, s))) {
    return error;
  }
  return static_cast<int>(cudaStreamSynchronize(s));
}

}  // namespace launch
}  // namespace cuda
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CUDA_LAUNCH_CUH_
