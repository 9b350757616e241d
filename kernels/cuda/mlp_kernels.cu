// Kernels of mlp_kernels.h. The softmax arithmetic is the CPU model's
// (worker/mlp.cc): per row in double, from the row's largest logit.
#include "kernels/cuda/mlp_kernels.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "kernels/cuda/launch.cuh"

namespace leeway {
namespace cuda {
namespace {

__global__ void FillRowsKernel(float* a, const float* bias, int rows, int cols) {
  const size_t n = size_t(rows) * cols;
  LEEWAY_GRID_STRIDE(i, n) { a[i] = bias[i % cols]; }
}

__global__ void ReluKernel(float* a, size_t n) {
  LEEWAY_GRID_STRIDE(i, n) { a[i] = fmaxf(a[i], 0.0f); }
}

__global__ void ReluMaskKernel(float* delta, const float* a, size_t n) {
  LEEWAY_GRID_STRIDE(i, n) {
    if (a[i] <= 0.0f) delta[i] = 0.0f;
  }
}

// One thread per column, rows in order (as the CPU adds them).
__global__ void ColumnSumsKernel(const float* d, int rows, int cols, float* out) {
  LEEWAY_GRID_STRIDE(c, size_t(cols)) {
    float sum = 0.0f;
    for (int r = 0; r < rows; ++r) sum += d[size_t(r) * cols + c];
    out[c] = sum;
  }
}

struct SoftmaxTotals {
  double loss;
  int correct;
};

// One thread per row.
__global__ void SoftmaxKernel(const float* logits, const uint8_t* labels, int rows, int classes,
                              float* d, SoftmaxTotals* totals) {
  LEEWAY_GRID_STRIDE(b, size_t(rows)) {
    const float* z = logits + b * classes;
    int best = 0;
    for (int k = 1; k < classes; ++k) {
      if (z[k] > z[best]) best = k;
    }
    const float top = z[best];
    double sum = 0;
    for (int k = 0; k < classes; ++k) sum += exp(double(z[k]) - top);
    const int label = labels[b];
    atomicAdd(&totals->loss, log(sum) - (double(z[label]) - top));
    if (best == label) atomicAdd(&totals->correct, 1);
    if (d == nullptr) continue;
    for (int k = 0; k < classes; ++k) {
      const double p = exp(double(z[k]) - top) / sum;
      d[b * classes + k] = static_cast<float>((p - (k == label)) / rows);
    }
  }
}

}  // namespace

int CreateBlas(void** blas, void* stream) {
  cublasHandle_t handle = nullptr;
  cublasStatus_t s = cublasCreate(&handle);
  if (s != CUBLAS_STATUS_SUCCESS) return static_cast<int>(s);
  // Plain fp32 products (no TF32), as the CPU model computes them.
  s = cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH);
  if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(handle, launch::S(stream));
  if (s != CUBLAS_STATUS_SUCCESS) {
    cublasDestroy(handle);
    return static_cast<int>(s);
  }
  *blas = handle;
  return 0;
}

int DestroyBlas(void* blas) {
  return static_cast<int>(cublasDestroy(static_cast<cublasHandle_t>(blas)));
}

const char* BlasErrorString(int code) {
  return cublasGetStatusString(static_cast<cublasStatus_t>(code));
}

int Gemm(void* blas, bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
         int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  // Row-major C is column-major C^T = op(B)^T op(A)^T: B's and A's memory
  // read column-major are B^T and A^T.
  const float alpha = 1.0f;
  return static_cast<int>(cublasSgemm(
      static_cast<cublasHandle_t>(blas), transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
      transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta, c, ldc));
}

int FillRows(float* a, const float* bias, int rows, int cols, void* stream) {
  const size_t n = size_t(rows) * cols;
  if (n == 0) return 0;
  return launch::Over(n, stream, FillRowsKernel, a, bias, rows, cols);
}

int Relu(float* a, size_t n, void* stream) {
  if (n == 0) return 0;
  return launch::Over(n, stream, ReluKernel, a, n);
}

int ReluMask(float* delta, const float* a, size_t n, void* stream) {
  if (n == 0) return 0;
  return launch::Over(n, stream, ReluMaskKernel, delta, a, n);
}

int ColumnSums(const float* d, int rows, int cols, float* out, void* stream) {
  if (cols == 0) return 0;
  return launch::Over(size_t(cols), stream, ColumnSumsKernel, d, rows, cols, out);
}

int SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int rows, int classes, float* d,
                        double* host_loss, int* host_correct, void* stream) {
  SoftmaxTotals totals = {0.0, 0};
  if (rows > 0) {
    const int error = launch::WithTotals(&totals, stream, [&](SoftmaxTotals* device) {
      return launch::Over(size_t(rows), stream, SoftmaxKernel, logits, labels, rows, classes, d,
                          device);
    });
    if (error != 0) return error;
  }
  *host_loss = totals.loss;
  *host_correct = totals.correct;
  return 0;
}

}  // namespace cuda
}  // namespace leeway
