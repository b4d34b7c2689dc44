// SPDX-License-Identifier: Apache-2.0
// 64-bit key mixing shared by the trackers. Page numbers and addresses are
// highly regular (consecutive, aligned), so every tracker first runs the key
// through a full-avalanche finalizer before taking bits from it.
#pragma once
#include <cstdint>

namespace cxlpool::tiering {

// Bijective 64-bit finalizer (xor-shift / multiply rounds, splitmix64 constants).
constexpr std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

}  // namespace cxlpool::tiering
