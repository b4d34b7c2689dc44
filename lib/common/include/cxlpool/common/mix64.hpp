// SPDX-License-Identifier: Apache-2.0
// splitmix64's finalizer: a bijective 64-bit mixer with full avalanche, for
// hashing regular keys (page numbers, addresses) and for stateless seeded
// values (any element drawn on its own). The CUDA kernels keep their own
// __host__ __device__ copy in cuda/reference/kernel_math.hpp.
#pragma once

#include <cstdint>

namespace cxlpool {

constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace cxlpool
