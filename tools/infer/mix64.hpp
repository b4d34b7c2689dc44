// SPDX-License-Identifier: Apache-2.0
// The seeded 64-bit mixer (splitmix64's finalizer) behind the tool's random
// weights and prompts: stateless, so any element can be drawn on its own and
// both serving paths see the same values.
#pragma once

#include <cstdint>

namespace cxlpool::infer {

inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x;
}

}  // namespace cxlpool::infer
