// SPDX-License-Identifier: Apache-2.0
#include "random_map.hpp"

#include <algorithm>

namespace cxlpool::io {
namespace {

constexpr std::uint64_t kNone = ~0ull;

}  // namespace

RandomMap::RandomMap(std::uint64_t blocks) : blocks_(blocks) { clear(); }

void RandomMap::clear() {
  used_ = 0;
  const std::uint64_t nwords = (blocks_ + 63) / 64;
  words_.assign(nwords, 0);
  full_words_.assign((nwords + 63) / 64, 0);
  // Bits past the end count as done so a word can become full.
  if (blocks_ % 64 != 0) {
    words_.back() = ~0ull << (blocks_ % 64);
  }
}

void RandomMap::set(std::uint64_t block) {
  std::uint64_t& w = words_[block >> 6];
  w |= 1ull << (block & 63);
  ++used_;
  if (w == ~0ull) {
    const std::uint64_t wi = block >> 6;
    full_words_[wi >> 6] |= 1ull << (wi & 63);
  }
}

std::uint64_t RandomMap::first_free_word_from(std::uint64_t word) const {
  const std::uint64_t nwords = words_.size();
  if (word >= nwords) return kNone;
  std::uint64_t si = word >> 6;
  std::uint64_t mask = ~full_words_[si] & (~0ull << (word & 63));
  for (;;) {
    if (mask != 0) {
      const std::uint64_t wi = (si << 6) + static_cast<std::uint64_t>(__builtin_ctzll(mask));
      return wi < nwords ? wi : kNone;
    }
    if (++si >= full_words_.size()) return kNone;
    mask = ~full_words_[si];
  }
}

std::uint64_t RandomMap::next_free(std::uint64_t block) const {
  if (block >= blocks_) block = 0;
  std::uint64_t wi = block >> 6;
  // The rest of the first word, then whole words through the summary.
  std::uint64_t free_bits = ~words_[wi] & (~0ull << (block & 63));
  if (free_bits != 0) return (wi << 6) + static_cast<std::uint64_t>(__builtin_ctzll(free_bits));
  wi = first_free_word_from(wi + 1);
  if (wi == kNone) wi = first_free_word_from(0);
  if (wi == kNone) return block;  // full: callers check full() first
  free_bits = ~words_[wi];
  return (wi << 6) + static_cast<std::uint64_t>(__builtin_ctzll(free_bits));
}

std::uint64_t RandomMap::mark_run(std::uint64_t first, std::uint64_t count) {
  std::uint64_t n = 0;
  const std::uint64_t end = std::min(blocks_, first + count);
  for (std::uint64_t b = first; b < end && !is_used(b); ++b, ++n) set(b);
  return n;
}

}  // namespace cxlpool::io
