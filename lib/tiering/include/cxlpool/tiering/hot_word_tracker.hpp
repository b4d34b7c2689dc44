// SPDX-License-Identifier: Apache-2.0
// Hot-word tracker (HWT): for a bounded set of candidate pages, which of the
// 64 64-byte words of each 4 KiB page were touched, and how often the page was
// accessed. A page whose accesses hit few words (sparse) gains little from
// promotion: most of the 4 KiB moved would stay cold.
//
// The table holds at most `capacity` pages. A new page arriving at a full
// table evicts the page with the fewest accesses (O(capacity): the table is
// meant for the few hundred pages the HPT nominates, not for every page).
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::tiering {

struct HotWordTrackerConfig {
  std::size_t capacity = 1024;          // pages tracked, 1..kMaxCapacity
  std::uint32_t sparse_max_words = 16;  // sparse if touched words <= this, 0..64
};

struct PageWords {
  std::uint64_t page = 0;      // page number: address >> 12
  std::uint64_t words = 0;     // bit w set: bytes [w*64, w*64+64) were touched
  std::uint64_t accesses = 0;  // record() calls that touched the page
  int touched_words() const { return std::popcount(words); }
};

class HotWordTracker {
 public:
  static constexpr std::uint64_t kPageShift = 12;
  static constexpr std::uint64_t kPageBytes = 1ULL << kPageShift;
  static constexpr std::uint64_t kWordShift = 6;
  static constexpr std::uint64_t kWordBytes = 1ULL << kWordShift;
  static constexpr std::size_t kMaxCapacity = 1u << 24;

  // EINVAL: capacity outside 1..kMaxCapacity or sparse_max_words > 64.
  static Result<HotWordTracker> create(const HotWordTrackerConfig& config);

  // Marks every word covered by [address, address + bytes) in every page it
  // spans; each page spanned counts one access. bytes == 0 touches nothing;
  // a range past the top of the address space is clipped there. Costs one
  // table update per page spanned.
  void record(std::uint64_t address, std::uint64_t bytes);

  std::optional<PageWords> find(std::uint64_t page) const;
  // Untracked pages are neither: nullopt.
  std::optional<bool> is_sparse(std::uint64_t page) const;
  bool is_sparse(const PageWords& p) const { return p.touched_words() <= static_cast<int>(sparse_max_words_); }

  // Tracked pages, most accessed first (ties by page number).
  std::vector<PageWords> pages() const;

  // New epoch: forgets every page.
  void reset();

  std::size_t size() const { return entries_.size(); }
  std::size_t capacity() const { return capacity_; }
  std::uint64_t evictions() const { return evictions_; }

 private:
  static constexpr std::uint32_t kEmpty = 0xffffffffu;

  HotWordTracker(const HotWordTrackerConfig& config);
  void touch(std::uint64_t page, std::uint64_t mask);
  std::size_t home(std::uint64_t page) const;
  std::uint32_t lookup(std::uint64_t page) const;
  void insert_index(std::uint32_t entry);
  void rebuild_index();

  std::size_t capacity_;
  std::uint32_t sparse_max_words_;
  std::uint64_t evictions_ = 0;
  std::vector<PageWords> entries_;    // dense, at most capacity_
  std::vector<std::uint32_t> index_;  // open addressing (linear probing) into entries_
};

}  // namespace cxlpool::tiering
