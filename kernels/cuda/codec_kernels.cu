// CUDA kernels of the device codecs (codec_kernels.h). They share the
// element arithmetic with the CPU codecs (half.h, counter_random.h) and are
// compiled without fused multiply-add contraction (-fmad=false), so that
// dense payloads come out bit-identical to the CPU's.
#include "kernels/cuda/codec_kernels.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cub/cub.cuh>
#include <vector>

#include "kernels/counter_random.h"
#include "kernels/cuda/launch.cuh"
#include "kernels/half.h"

namespace leeway {
namespace cuda {
namespace {

using launch::Grid;
using launch::kThreads;
using launch::Launched;
using launch::S;
using launch::Scratch;

__device__ inline uint32_t Load32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}
__device__ inline uint16_t Load16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | p[1] << 8);
}
__device__ inline void Store32(uint8_t* p, uint32_t v) {
  p[0] = v & 0xFF;
  p[1] = (v >> 8) & 0xFF;
  p[2] = (v >> 16) & 0xFF;
  p[3] = v >> 24;
}
__device__ inline void Store16(uint8_t* p, uint16_t v) {
  p[0] = v & 0xFF;
  p[1] = v >> 8;
}

__device__ inline float V(const float* g, const float* r, size_t i) {
  return r != nullptr ? g[i] + r[i] : g[i];
}

__global__ void CheckKernel(const float* g, const float* r, size_t n, int* bad) {
  int local_bad = 0;
  LEEWAY_GRID_STRIDE(i, n) { local_bad |= MagnitudeKey(V(g, r, i)) >= 0x7F800000u; }
  if (local_bad) atomicOr(bad, 1);
}

__global__ void AddIntoKernel(const float* g, float* r, size_t n) {
  LEEWAY_GRID_STRIDE(i, n) { r[i] += g[i]; }
}

__global__ void ElementwiseKernel(uint8_t codec, size_t n, const float* g,
                                  float* r, uint8_t* body) {
  LEEWAY_GRID_STRIDE(i, n) {
    const float v = V(g, r, i);
    if (codec == 0) {
      Store32(body + 4 * i, FloatBits(v));
      if (r != nullptr) r[i] = 0.0f;
    } else if (codec == 1) {
      const uint16_t h = FloatToFp16(v);
      Store16(body + 2 * i, h);
      if (r != nullptr) r[i] = v - Fp16ToFloat(h);
    } else {
      const uint16_t h = FloatToBf16(v);
      Store16(body + 2 * i, h);
      if (r != nullptr) r[i] = v - Bf16ToFloat(h);
    }
  }
}

struct MaxOf {
  __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};

// One block per bucket: the bucket's max |v|, then its levels.
__global__ void Int8Kernel(uint32_t bucket, uint32_t seed, size_t n,
                           const float* g, float* r, uint8_t* body) {
  const size_t start = size_t{blockIdx.x} * bucket;
  const size_t stop = min(n, start + bucket);
  uint32_t max_bits = 0;
  for (size_t i = start + threadIdx.x; i < stop; i += blockDim.x) {
    max_bits = max(max_bits, MagnitudeKey(V(g, r, i)));
  }
  using Reduce = cub::BlockReduce<uint32_t, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ uint32_t bucket_max;
  const uint32_t reduced = Reduce(storage).Reduce(max_bits, MaxOf());
  if (threadIdx.x == 0) bucket_max = reduced;
  __syncthreads();
  const float scale = BitsFloat(bucket_max) / 127.0f;
  if (threadIdx.x == 0) Store32(body + 4 * size_t{blockIdx.x}, FloatBits(scale));
  const float inverse = scale > 0.0f ? 1.0f / scale : 0.0f;
  int8_t* q = reinterpret_cast<int8_t*>(body + 4 * ((n + bucket - 1) / bucket));
  for (size_t i = start + threadIdx.x; i < stop; i += blockDim.x) {
    const float v = V(g, r, i);
    const float shifted =
        v * inverse + DitherUniform(seed, static_cast<uint32_t>(i)) + 128.0f;
    float level = static_cast<float>(static_cast<int>(shifted) - 128);
    level = fminf(127.0f, fmaxf(-127.0f, level));
    q[i] = static_cast<int8_t>(level);
    if (r != nullptr) r[i] = v - level * scale;
  }
}

// One block per bucket (a multiple of 8 elements): the bucket's mean |v|,
// then a thread per byte of sign bits (v's sign bit, as on the CPU).
__global__ void SignKernel(uint32_t bucket, size_t n, const float* g, float* r,
                           uint8_t* body) {
  const size_t start = size_t{blockIdx.x} * bucket;
  const size_t stop = min(n, start + bucket);
  float sum = 0.0f;
  for (size_t i = start + threadIdx.x; i < stop; i += blockDim.x) sum += fabsf(V(g, r, i));
  using Reduce = cub::BlockReduce<float, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  __shared__ float bucket_scale;
  const float total = Reduce(storage).Sum(sum);
  if (threadIdx.x == 0) bucket_scale = total / static_cast<float>(stop - start);
  __syncthreads();
  const float scale = bucket_scale;
  if (threadIdx.x == 0) Store32(body + 4 * size_t{blockIdx.x}, FloatBits(scale));
  uint8_t* bits = body + 4 * ((n + bucket - 1) / bucket);
  for (size_t b = start / 8 + threadIdx.x; 8 * b < stop; b += blockDim.x) {
    uint32_t byte = 0;
    for (size_t i = 8 * b; i < min(stop, 8 * b + 8); ++i) {
      const float v = V(g, r, i);
      const uint32_t negative = FloatBits(v) >> 31;
      byte |= negative << (i % 8);
      if (r != nullptr) r[i] = v - (negative != 0 ? -scale : scale);
    }
    bits[b] = static_cast<uint8_t>(byte);
  }
}

__device__ inline float DenseValue(uint8_t codec, uint32_t param, size_t count,
                                   const uint8_t* body, size_t j) {
  switch (codec) {
    case 0: return BitsFloat(Load32(body + 4 * j));
    case 1: return Fp16ToFloat(Load16(body + 2 * j));
    case 2: return Bf16ToFloat(Load16(body + 2 * j));
    case 3: {
      const size_t buckets = (count + param - 1) / param;
      const auto q = static_cast<int8_t>(body[4 * buckets + j]);
      return static_cast<float>(q) * BitsFloat(Load32(body + 4 * (j / param)));
    }
    default: {
      const size_t buckets = (count + param - 1) / param;
      const float scale = BitsFloat(Load32(body + 4 * (j / param)));
      return (body[4 * buckets + j / 8] >> (j % 8)) & 1u ? -scale : scale;
    }
  }
}

__global__ void DecodeKernel(uint8_t codec, uint32_t param, size_t count,
                             const uint8_t* body, const uint32_t* indices,
                             float scale, bool accumulate, float* out) {
  LEEWAY_GRID_STRIDE(j, count) {
    const size_t at = indices != nullptr ? indices[j] : j;
    const float value = scale * DenseValue(codec, param, count, body, j);
    out[at] = accumulate ? out[at] + value : value;
  }
}

__global__ void SampleKernel(const float* g, const float* r, size_t n,
                             size_t m, uint64_t seed, uint32_t* keys) {
  LEEWAY_GRID_STRIDE(j, m) { keys[j] = MagnitudeKey(V(g, r, TopKSampleIndex(seed, j, n, m))); }
}

__global__ void GatherKernel(const float* g, float* r, size_t n, uint32_t key,
                             size_t cap, uint32_t* candidates,
                             unsigned long long* count) {
  LEEWAY_GRID_STRIDE(i, n) {
    const float v = V(g, r, i);
    if (r != nullptr) r[i] = v;
    if (MagnitudeKey(v) >= key) {
      const unsigned long long at = atomicAdd(count, 1ull);
      if (at < cap) candidates[at] = static_cast<uint32_t>(i);
    }
  }
}

__global__ void KeysKernel(const float* v, const uint32_t* indices,
                           size_t count, uint32_t* keys) {
  LEEWAY_GRID_STRIDE(j, count) { keys[j] = MagnitudeKey(v[indices[j]]); }
}

__global__ void RandomKKernel(uint64_t seed, size_t n, size_t k, uint32_t* out) {
  LEEWAY_GRID_STRIDE(j, k) { out[j] = static_cast<uint32_t>(RandomKIndex(seed, j, n, k)); }
}

__global__ void GatherValuesKernel(const float* v, const uint32_t* indices,
                                   size_t k, bool randomk_scale, size_t n,
                                   float* out) {
  LEEWAY_GRID_STRIDE(j, k) {
    const float scale =
        randomk_scale ? static_cast<float>(RandomKStratum(j, n, k).size) : 1.0f;
    out[j] = v[indices[j]] * scale;
  }
}

}  // namespace

const char* ErrorString(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

int Malloc(void** pointer, size_t bytes, Stream stream) {
  return static_cast<int>(cudaMallocAsync(pointer, std::max<size_t>(bytes, 1), S(stream)));
}

int Free(void* pointer, Stream stream) {
  return static_cast<int>(cudaFreeAsync(pointer, S(stream)));
}

int CopyToHost(void* host_dst, const void* src, size_t bytes, Stream stream) {
  if (bytes == 0) return 0;
  const cudaError_t e =
      cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, S(stream));
  return e != cudaSuccess ? static_cast<int>(e) : Synchronize(stream);
}

int CopyToDevice(void* dst, const void* host_src, size_t bytes, Stream stream) {
  if (bytes == 0) return 0;
  const cudaError_t e =
      cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, S(stream));
  return e != cudaSuccess ? static_cast<int>(e) : Synchronize(stream);
}

int CopyOnDevice(void* dst, const void* src, size_t bytes, Stream stream) {
  const cudaError_t e =
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, S(stream));
  return e != cudaSuccess ? static_cast<int>(e) : Synchronize(stream);
}

int Synchronize(Stream stream) {
  return static_cast<int>(cudaStreamSynchronize(S(stream)));
}

int CreateStream(Stream* stream) {
  cudaStream_t created = nullptr;
  const cudaError_t e = cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking);
  *stream = created;
  return static_cast<int>(e);
}

int DestroyStream(Stream stream) { return static_cast<int>(cudaStreamDestroy(S(stream))); }

int CheckFinite(const float* g, const float* r, size_t n, Stream stream,
                bool* host_finite) {
  int bad = 0;
  const int error = launch::WithTotals(&bad, stream, [&](int* device_bad) {
    return launch::Over(n, stream, CheckKernel, g, r, n, device_bad);
  });
  if (error != 0) return error;
  *host_finite = bad == 0;
  return 0;
}

int AddInto(const float* g, float* r, size_t n, Stream stream) {
  if (n == 0) return 0;
  AddIntoKernel<<<Grid(n), kThreads, 0, S(stream)>>>(g, r, n);
  return Launched();
}

int EncodeDense(uint8_t codec, uint32_t param, uint64_t seed, size_t n,
                const float* g, float* r, uint8_t* body, Stream stream) {
  if (n == 0) return 0;
  // int8 and sign: a block per bucket (param, the bucket, is > 0 for them).
  const auto buckets = static_cast<unsigned>(param > 0 ? (n + param - 1) / param : 0);
  switch (codec) {
    case 3:
      Int8Kernel<<<buckets, kThreads, 0, S(stream)>>>(param, DitherSeed(seed), n, g, r,
                                                      body);
      break;
    case 4:
      SignKernel<<<buckets, kThreads, 0, S(stream)>>>(param, n, g, r, body);
      break;
    default:
      ElementwiseKernel<<<Grid(n), kThreads, 0, S(stream)>>>(codec, n, g, r, body);
  }
  return Launched();
}

int DecodeDense(uint8_t codec, uint32_t param, size_t count,
                const uint8_t* body, const uint32_t* indices, float scale,
                bool accumulate, float* out, Stream stream) {
  if (count == 0) return 0;
  DecodeKernel<<<Grid(count), kThreads, 0, S(stream)>>>(codec, param, count, body,
                                                        indices, scale, accumulate, out);
  return Launched();
}

int SampleKeys(const float* g, const float* r, size_t n, size_t m,
               uint64_t seed, uint32_t* host_keys, Stream stream) {
  int error = 0;
  Scratch keys(sizeof(uint32_t) * m, stream, &error);
  if (error != 0) return error;
  SampleKernel<<<Grid(m), kThreads, 0, S(stream)>>>(g, r, n, m, seed, keys.as<uint32_t>());
  if ((error = Launched())) return error;
  return CopyToHost(host_keys, keys.as<uint32_t>(), sizeof(uint32_t) * m, stream);
}

int GatherAtLeast(const float* g, float* r, size_t n, uint32_t key,
                  size_t cap, uint32_t* candidates, size_t* host_count,
                  Stream stream) {
  unsigned long long total = 0;
  const int error = launch::WithTotals(&total, stream, [&](unsigned long long* count) {
    return launch::Over(n, stream, GatherKernel, g, r, n, key, cap, candidates, count);
  });
  if (error != 0) return error;
  *host_count = static_cast<size_t>(total);
  return 0;
}

int KeepTopK(const float* v, const uint32_t* candidates, size_t count,
             size_t k, uint32_t* out, Stream stream) {
  if (k == 0) return 0;
  int error = 0;
  const int items = static_cast<int>(count);
  Scratch by_index(sizeof(uint32_t) * count, stream, &error);
  Scratch keys(sizeof(uint32_t) * count, stream, &error);
  Scratch keys_sorted(sizeof(uint32_t) * count, stream, &error);
  Scratch by_key(sizeof(uint32_t) * count, stream, &error);
  if (error != 0) return error;
  // Temporary storage: the largest any of the three sorts asks for.
  size_t temp_bytes = 0, need = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, need, candidates, by_index.as<uint32_t>(), items);
  temp_bytes = std::max(temp_bytes, need);
  cub::DeviceRadixSort::SortPairsDescending(nullptr, need, keys.as<uint32_t>(),
                                            keys_sorted.as<uint32_t>(),
                                            by_index.as<uint32_t>(), by_key.as<uint32_t>(), items);
  temp_bytes = std::max(temp_bytes, need);
  Scratch temp(temp_bytes, stream, &error);
  if (error != 0) return error;
  // 1. Candidates by index; 2. their keys; 3. a stable sort by key,
  // descending, keeps lower indices first among ties; 4. the first k, by
  // index again.
  cudaStream_t s = S(stream);
  error = static_cast<int>(cub::DeviceRadixSort::SortKeys(
      temp.as<void>(), temp_bytes, candidates, by_index.as<uint32_t>(), items, 0, 32, s));
  if (error != 0) return error;
  KeysKernel<<<Grid(count), kThreads, 0, s>>>(v, by_index.as<uint32_t>(), count,
                                              keys.as<uint32_t>());
  if ((error = Launched())) return error;
  error = static_cast<int>(cub::DeviceRadixSort::SortPairsDescending(
      temp.as<void>(), temp_bytes, keys.as<uint32_t>(), keys_sorted.as<uint32_t>(),
      by_index.as<uint32_t>(), by_key.as<uint32_t>(), items, 0, 32, s));
  if (error != 0) return error;
  error = static_cast<int>(cub::DeviceRadixSort::SortKeys(
      temp.as<void>(), temp_bytes, by_key.as<uint32_t>(), out, static_cast<int>(k), 0, 32, s));
  if (error != 0) return error;
  return Synchronize(stream);
}

int RandomKIndices(uint64_t seed, size_t n, size_t k, uint32_t* out,
                   Stream stream) {
  if (k == 0) return 0;
  RandomKKernel<<<Grid(k), kThreads, 0, S(stream)>>>(seed, n, k, out);
  return Launched();
}

int GatherValues(const float* v, const uint32_t* indices, size_t k,
                 bool randomk_scale, size_t n, float* out, Stream stream) {
  if (k == 0) return 0;
  GatherValuesKernel<<<Grid(k), kThreads, 0, S(stream)>>>(v, indices, k, randomk_scale,
                                                          n, out);
  return Launched();
}

}  // namespace cuda
}  // namespace leeway
