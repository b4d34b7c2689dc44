// SPDX-License-Identifier: Apache-2.0
#include "pattern_ref.hpp"

#include "kernel_math.hpp"

namespace cxlpool::cuda::ref {

void fill_pattern(std::span<std::byte> dst, uint64_t seed) {
  for (size_t i = 0; i < dst.size(); ++i) {
    const uint64_t word = math::pattern_word(seed, i / 8);
    dst[i] = static_cast<std::byte>(word >> (8 * (i % 8)));
  }
}

uint64_t checksum(std::span<const std::byte> src) {
  uint64_t sum = math::checksum_length_term(src.size());
  for (size_t w = 0; w * 8 < src.size(); ++w) {
    uint64_t word = 0;
    for (size_t b = 0; b < 8 && w * 8 + b < src.size(); ++b) {
      word |= static_cast<uint64_t>(src[w * 8 + b]) << (8 * b);
    }
    sum += math::checksum_term(word, w);
  }
  return sum;
}

}  // namespace cxlpool::cuda::ref
