// LEEWAY_HOST_DEVICE marks small inline functions that the CPU codecs and
// their CUDA twins share (conversions, counter-based random draws), so
// that both compute bit-identical results from one definition.
#ifndef LEEWAY_KERNELS_HOST_DEVICE_H_
#define LEEWAY_KERNELS_HOST_DEVICE_H_

#ifdef __CUDACC__
#define LEEWAY_HOST_DEVICE __host__ __device__
#else
#define LEEWAY_HOST_DEVICE
#endif

#endif  // LEEWAY_KERNELS_HOST_DEVICE_H_
