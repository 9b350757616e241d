// Top-k's gather over one block, for the CPU codecs: with r, stores
// v = g + r into r (v = g without r, nothing written); appends to `indices`
// and `keys` every i in [begin, end) whose magnitude key (half.h
// MagnitudeKey: |v|'s bits, ordered as |v|) is at least `key`, in index
// order, with that key. On x86-64 CPUs with AVX2 it compares eight
// elements an instruction (chosen at run time), elsewhere it runs the
// scalar loop; the output is the same. Also the same scan over unsigned
// keys (a server's change stamps: which elements changed after a version).
// Thread-safe.
#ifndef LEEWAY_KERNELS_GATHER_BLOCK_H_
#define LEEWAY_KERNELS_GATHER_BLOCK_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leeway {
namespace codec_internal {

void GatherBlock(const float* g, float* r, size_t begin, size_t end, uint32_t key,
                 std::vector<uint32_t>* indices, std::vector<uint32_t>* keys);

// The scalar version, for tests that compare the two paths.
void GatherBlockScalar(const float* g, float* r, size_t begin, size_t end,
                       uint32_t key, std::vector<uint32_t>* indices,
                       std::vector<uint32_t>* keys);

// Appends every i in [begin, end) with keys[i] > threshold, ascending.
void GatherKeysAbove(const uint32_t* keys, size_t begin, size_t end, uint32_t threshold,
                     std::vector<uint32_t>* indices);

}  // namespace codec_internal
}  // namespace leeway

#endif  // LEEWAY_KERNELS_GATHER_BLOCK_H_
