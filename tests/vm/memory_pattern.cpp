// SPDX-License-Identifier: Apache-2.0
#include "memory_pattern.hpp"

#include <cstdio>
#include <string>

namespace cxlpool::vmtest {
namespace {

// splitmix64's finalizer: cheap, and every word differs from its neighbours.
uint64_t pattern_word(uint64_t seed, uint64_t index) {
  uint64_t z = seed + index * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

void fill_pattern(void* addr, size_t length, uint64_t seed) {
  auto* words = static_cast<uint64_t*>(addr);
  for (size_t i = 0; i < length / sizeof(uint64_t); ++i) words[i] = pattern_word(seed, i);
}

Result<void> verify_pattern(const void* addr, size_t length, uint64_t seed) {
  const auto* words = static_cast<const uint64_t*>(addr);
  for (size_t i = 0; i < length / sizeof(uint64_t); ++i) {
    const uint64_t want = pattern_word(seed, i);
    if (words[i] != want) {
      char text[160];
      std::snprintf(text, sizeof(text), "pattern mismatch at byte %zu: %016llx, expected %016llx",
                    i * sizeof(uint64_t), static_cast<unsigned long long>(words[i]),
                    static_cast<unsigned long long>(want));
      return fail(EIO, text);
    }
  }
  return {};
}

}  // namespace cxlpool::vmtest
