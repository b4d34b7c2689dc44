// SPDX-License-Identifier: Apache-2.0
// Arithmetic shared by the CUDA kernels and their CPU references, so that both
// sides define the pattern and checksum with the very same formulas. Plain
// C++: nvcc sees the __host__ __device__ qualifiers, the host compiler does not.
#pragma once

#include <cstdint>

#include "cxlpool/common/mix64.hpp"

#if defined(__CUDACC__)
#define CXLPOOL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CXLPOOL_HOST_DEVICE inline
#endif

namespace cxlpool::cuda::math {

inline constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;

// splitmix64 finaliser: a bijection on 64-bit words with full avalanche;
// the host code's own, which nvcc compiles for the device too.
using cxlpool::mix64;

// Little-endian 64-bit word `word_index` of the pattern for `seed`.
CXLPOOL_HOST_DEVICE uint64_t pattern_word(uint64_t seed, uint64_t word_index) {
  return mix64(seed + (word_index + 1) * kGolden);
}

// Contribution of one little-endian word (zero-padded past the end) at its
// position. The checksum is the wrapping sum of all terms plus mix64(length),
// so it is independent of the order in which threads add terms but still
// changes when words move, change, or trailing zero bytes are appended.
CXLPOOL_HOST_DEVICE uint64_t checksum_term(uint64_t word, uint64_t word_index) {
  return mix64(word ^ mix64(word_index ^ kGolden));
}

CXLPOOL_HOST_DEVICE uint64_t checksum_length_term(uint64_t length) {
  return mix64(length + kGolden);
}

}  // namespace cxlpool::cuda::math
