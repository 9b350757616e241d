// The CUDA kernels behind the device codecs (kernels/codec_cuda.h), as
// plain host-callable functions: no CUDA or Abseil types, so that the
// orchestration lives in ordinary C++ that shares the payload layout code
// with the CPU path. Pointers are device pointers unless named host_*.
// Every function enqueues on `stream` (a cudaStream_t) and returns a CUDA
// error code, 0 for success; ErrorString names it. Functions that hand a
// result to the host synchronize the stream first.
#ifndef LEEWAY_KERNELS_CUDA_CODEC_KERNELS_H_
#define LEEWAY_KERNELS_CUDA_CODEC_KERNELS_H_

#include <cstddef>
#include <cstdint>

namespace leeway {
namespace cuda {

using Stream = void*;

const char* ErrorString(int code);
int Malloc(void** pointer, size_t bytes, Stream stream);
int Free(void* pointer, Stream stream);
int CopyToHost(void* host_dst, const void* src, size_t bytes, Stream stream);
int CopyToDevice(void* dst, const void* host_src, size_t bytes, Stream stream);
int CopyOnDevice(void* dst, const void* src, size_t bytes, Stream stream);
int Synchronize(Stream stream);
// A stream that does not synchronize with the legacy default stream.
int CreateStream(Stream* stream);
int DestroyStream(Stream stream);

// v = g + r (v = g when r is null), read only: *host_finite = whether every
// v is finite.
int CheckFinite(const float* g, const float* r, size_t n, Stream stream,
                bool* host_finite);

// r += g.
int AddInto(const float* g, float* r, size_t n, Stream stream);

// A dense body (codec 0-4) of v = g + r (v = g without r) into `body`
// (device, DenseBodyBytes long); with r, r = v - decoded. param: the int8
// or sign bucket.
int EncodeDense(uint8_t codec, uint32_t param, uint64_t seed, size_t n,
                const float* g, float* r, uint8_t* body, Stream stream);

// For j < count: out[at(j)] = scale * value(j), or += with `accumulate`,
// where at(j) = indices[j] (indices not null) or j, and value(j) is element
// j of a validated dense body of `count` elements.
int DecodeDense(uint8_t codec, uint32_t param, size_t count,
                const uint8_t* body, const uint32_t* indices, float scale,
                bool accumulate, float* out, Stream stream);

// Magnitude keys of v = g + r at TopKSampleIndex(seed, j, n, m), j < m.
int SampleKeys(const float* g, const float* r, size_t n, size_t m,
               uint64_t seed, uint32_t* host_keys, Stream stream);

// Every i with MagnitudeKey(v_i) >= key into `candidates` (unordered, at
// most `cap`); *host_count = how many there are in all. With r, also
// stores v = g + r into r.
int GatherAtLeast(const float* g, float* r, size_t n, uint32_t key,
                  size_t cap, uint32_t* candidates, size_t* host_count,
                  Stream stream);

// The exact top-k of v among `count` candidates (which hold every element
// at or above the k-th largest), lowest indices first among ties, into
// `out` ascending. k <= count.
int KeepTopK(const float* v, const uint32_t* candidates, size_t count,
             size_t k, uint32_t* out, Stream stream);

// randomk's indices (RandomKIndex) for j < k.
int RandomKIndices(uint64_t seed, size_t n, size_t k, uint32_t* out,
                   Stream stream);

// out[j] = v[indices[j]] (times its randomk stratum's size when
// `randomk_scale`).
int GatherValues(const float* v, const uint32_t* indices, size_t k,
                 bool randomk_scale, size_t n, float* out, Stream stream);

}  // namespace cuda
}  // namespace leeway

#endif  // LEEWAY_KERNELS_CUDA_CODEC_KERNELS_H_
