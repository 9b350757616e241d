// The device twin of a worker's pass before a push (worker/sparse_input_pass.h
// and the dense path's check, worker/gradient_pass.h): DGC's momentum
// correction u = m velocity + g and error feedback's v = r + u, read first
// (finiteness and the sums of squares) and written only if every v is
// finite, so that a refusal on the device leaves velocity and r exactly as
// they were. The arithmetic is the CPU's, compiled without fused
// multiply-add (-fmad=false): u and v bit-identical to the CPU pass's.
// Plain host-callable functions like codec_kernels.h: device pointers,
// `stream` a cudaStream_t, a CUDA error code back (0: success); functions
// that hand results to the host synchronize the stream.
#ifndef LEEWAY_KERNELS_CUDA_SPARSE_INPUT_KERNELS_H_
#define LEEWAY_KERNELS_CUDA_SPARSE_INPUT_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace cuda {

struct InputCheck {
  bool finite = false;
  uint64_t first_bad = 0;  // the lowest index whose v is not finite
  double gradient = 0;     // sum g_i^2
  double v = 0;            // sum v_i^2
};

// Reads only. u = momentum * velocity + g (u = g when velocity is null),
// v = r + u (v = u when r is null).
int CheckSparseInput(float momentum, const float* velocity, const float* g, const float* r,
                     size_t n, void* stream, InputCheck* host_out);

// velocity = u (unless velocity is null), r = v; as CheckSparseInput forms
// them.
int WriteSparseInput(float momentum, float* velocity, const float* g, float* r, size_t n,
                     void* stream);

// x[indices[j]] = 0 for j < k.
int ZeroAt(float* x, const uint32_t* indices, size_t k, void* stream);

// x[0..n) = 0.
int Zero(float* x, size_t n, void* stream);

}  // namespace cuda
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CUDA_SPARSE_INPUT_KERNELS_H_
