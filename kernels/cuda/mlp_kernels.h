// The CUDA side of the MNIST MLP on a GPU (worker/device_mlp.h): cuBLAS
// matrix products in row-major terms and the element kernels around them
// (bias rows, ReLU and its mask, column sums, softmax cross-entropy), as
// plain host-callable functions like codec_kernels.h: device pointers
// unless named host_*, `stream` a cudaStream_t, a CUDA or cuBLAS status
// back (0: success; BlasErrorString names cuBLAS's).
#ifndef LEEWAY_KERNELS_CUDA_MLP_KERNELS_H_
#define LEEWAY_KERNELS_CUDA_MLP_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace cuda {

// A cuBLAS handle whose work goes to `stream`.
int CreateBlas(void** blas, void* stream);
int DestroyBlas(void* blas);
const char* BlasErrorString(int code);

// Row-major: C (m x n) = op(A) (m x k) * op(B) (k x n) + beta C, op(X) = X
// or its transpose; lda, ldb, ldc are the row lengths as stored.
int Gemm(void* blas, bool transpose_a, bool transpose_b, int m, int n, int k, const float* a,
         int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Every row of a (rows x cols) = bias.
int FillRows(float* a, const float* bias, int rows, int cols, void* stream);
// a = max(a, 0).
int Relu(float* a, size_t n, void* stream);
// delta = 0 where a <= 0.
int ReluMask(float* delta, const float* a, size_t n, void* stream);
// out[c] = sum over rows of d[r][c].
int ColumnSums(const float* d, int rows, int cols, float* out, void* stream);

// Softmax cross-entropy of `rows` rows of logits (rows x classes), labels
// on the device: *host_loss = the summed loss (double), *host_correct =
// how many rows' first largest logit is the label, and, when d is not
// null, d = (softmax - one-hot) / rows. Synchronizes the stream.
int SoftmaxCrossEntropy(const float* logits, const uint8_t* labels, int rows, int classes, float* d,
                        double* host_loss, int* host_correct, void* stream);

}  // namespace cuda
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CUDA_MLP_KERNELS_H_
