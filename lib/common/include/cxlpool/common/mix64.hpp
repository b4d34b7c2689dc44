// SPDX-License-Identifier: Apache-2.0
// splitmix64's finalizer: a bijective 64-bit mixer with full avalanche, for
// hashing regular keys (page numbers, addresses) and for stateless seeded
// values (any element drawn on its own). The CUDA kernels use it too
// (cuda/reference/kernel_math.hpp): under nvcc it is a device function as well.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CXLPOOL_MIX64_TARGETS __host__ __device__
#else
#define CXLPOOL_MIX64_TARGETS
#endif

namespace cxlpool {

CXLPOOL_MIX64_TARGETS constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace cxlpool
