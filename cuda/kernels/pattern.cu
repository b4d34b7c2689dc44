// SPDX-License-Identifier: Apache-2.0
// fill_pattern / checksum: write and verify a seed-defined byte pattern on the
// device. Same formulas as reference/pattern_ref.cpp (shared through
// kernel_math.hpp). Both kernels are grid-stride loops over 64-bit words; a
// trailing partial word is handled byte by byte.
#include <cstdint>

#include "kernel_math.hpp"

using cxlpool::cuda::math::checksum_length_term;
using cxlpool::cuda::math::checksum_term;
using cxlpool::cuda::math::pattern_word;

extern "C" __global__ void cxlpool_fill_pattern(unsigned char* dst, uint64_t bytes, uint64_t seed) {
  const uint64_t words = (bytes + 7) / 8;
  const bool aligned = (reinterpret_cast<uintptr_t>(dst) & 7u) == 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t w = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; w < words;
       w += stride) {
    const uint64_t value = pattern_word(seed, w);
    const uint64_t offset = w * 8;
    if (aligned && offset + 8 <= bytes) {
      *reinterpret_cast<uint64_t*>(dst + offset) = value;
    } else {
      for (uint64_t b = 0; b < 8 && offset + b < bytes; ++b) {
        dst[offset + b] = static_cast<unsigned char>(value >> (8 * b));
      }
    }
  }
}

// Adds the checksum of [src, src + bytes) to *result, which the caller zeroes.
extern "C" __global__ void cxlpool_checksum(const unsigned char* src, uint64_t bytes,
                                            unsigned long long* result) {
  const uint64_t words = (bytes + 7) / 8;
  const bool aligned = (reinterpret_cast<uintptr_t>(src) & 7u) == 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  uint64_t sum = first == 0 ? checksum_length_term(bytes) : 0;
  for (uint64_t w = first; w < words; w += stride) {
    const uint64_t offset = w * 8;
    uint64_t word = 0;
    if (aligned && offset + 8 <= bytes) {
      word = *reinterpret_cast<const uint64_t*>(src + offset);
    } else {
      for (uint64_t b = 0; b < 8 && offset + b < bytes; ++b) {
        word |= static_cast<uint64_t>(src[offset + b]) << (8 * b);
      }
    }
    sum += checksum_term(word, w);
  }
  // Wrapping addition is commutative, so the reduction order does not change
  // the result; one atomic per warp keeps contention low.
  for (int delta = 16; delta > 0; delta /= 2) sum += __shfl_down_sync(0xffffffffu, sum, delta);
  if ((threadIdx.x & 31u) == 0) atomicAdd(result, static_cast<unsigned long long>(sum));
}
