// SPDX-License-Identifier: Apache-2.0
// fio's random map: one bit per block of the job's range, so a random pass
// touches every block exactly once. A drawn block that is already done moves
// to the next free one (wrapping); a second level of one bit per full word
// keeps that search short as the pass fills up.
#pragma once

#include <cstdint>
#include <vector>

namespace cxlpool::io {

class RandomMap {
 public:
  explicit RandomMap(std::uint64_t blocks);

  std::uint64_t blocks() const { return blocks_; }
  std::uint64_t used() const { return used_; }
  bool full() const { return used_ == blocks_; }
  bool is_used(std::uint64_t block) const { return (words_[block >> 6] >> (block & 63)) & 1; }

  // The first free block at or after `block` (wrapping); the map must not be
  // full.
  std::uint64_t next_free(std::uint64_t block) const;

  // Marks up to `count` blocks from `first` (a free block) as used, stopping
  // at the first used one or the end of the range; returns how many.
  std::uint64_t mark_run(std::uint64_t first, std::uint64_t count);

  // Starts a new pass.
  void clear();

 private:
  void set(std::uint64_t block);
  std::uint64_t first_free_word_from(std::uint64_t word) const;  // ~0 when none

  std::uint64_t blocks_;
  std::uint64_t used_ = 0;
  std::vector<std::uint64_t> words_;      // bit set = block done
  std::vector<std::uint64_t> full_words_; // bit set = that word of words_ is all done
};

}  // namespace cxlpool::io
