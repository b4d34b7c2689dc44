// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/hot_word_tracker.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <string>

#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering {
namespace {

// Bits [first, last] set, 0 <= first <= last < 64.
std::uint64_t word_range(std::uint64_t first, std::uint64_t last) {
  const std::uint64_t upto_last = last == 63 ? ~0ULL : (1ULL << (last + 1)) - 1;
  return upto_last & ~((1ULL << first) - 1);
}

}  // namespace

Result<HotWordTracker> HotWordTracker::create(const HotWordTrackerConfig& config) {
  if (config.capacity < 1 || config.capacity > kMaxCapacity) {
    return fail(EINVAL, "hot-word tracker: capacity " + std::to_string(config.capacity) + " not in 1.." +
                            std::to_string(kMaxCapacity));
  }
  if (config.sparse_max_words > 64) {
    return fail(EINVAL, "hot-word tracker: sparse_max_words " + std::to_string(config.sparse_max_words) +
                            " above 64");
  }
  return HotWordTracker(config);
}

HotWordTracker::HotWordTracker(const HotWordTrackerConfig& config)
    : capacity_(config.capacity), sparse_max_words_(config.sparse_max_words) {
  entries_.reserve(capacity_);
  // Load factor <= 1/2 keeps linear-probing chains short.
  index_.assign(std::bit_ceil(capacity_ * 2), kEmpty);
}

std::size_t HotWordTracker::home(std::uint64_t page) const {
  return static_cast<std::size_t>(mix64(page)) & (index_.size() - 1);
}

std::uint32_t HotWordTracker::lookup(std::uint64_t page) const {
  const std::size_t mask = index_.size() - 1;
  for (std::size_t i = home(page);; i = (i + 1) & mask) {
    const std::uint32_t e = index_[i];
    if (e == kEmpty || entries_[e].page == page) return e;
  }
}

void HotWordTracker::insert_index(std::uint32_t entry) {
  const std::size_t mask = index_.size() - 1;
  std::size_t i = home(entries_[entry].page);
  while (index_[i] != kEmpty) i = (i + 1) & mask;
  index_[i] = entry;
}

void HotWordTracker::rebuild_index() {
  std::fill(index_.begin(), index_.end(), kEmpty);
  for (std::uint32_t e = 0; e < entries_.size(); ++e) insert_index(e);
}

void HotWordTracker::touch(std::uint64_t page, std::uint64_t mask) {
  std::uint32_t e = lookup(page);
  if (e == kEmpty) {
    if (entries_.size() < capacity_) {
      entries_.push_back({page, 0, 0});
      e = static_cast<std::uint32_t>(entries_.size() - 1);
      insert_index(e);
    } else {
      // Replace the coldest page in place; linear probing has no cheap
      // single-key delete, so the index is rebuilt (same O(capacity) as the scan).
      const auto coldest = std::min_element(entries_.begin(), entries_.end(),
                                            [](const PageWords& a, const PageWords& b) {
                                              return a.accesses < b.accesses;
                                            });
      *coldest = {page, 0, 0};
      e = static_cast<std::uint32_t>(coldest - entries_.begin());
      ++evictions_;
      rebuild_index();
    }
  }
  entries_[e].words |= mask;
  ++entries_[e].accesses;
}

void HotWordTracker::record(std::uint64_t address, std::uint64_t bytes) {
  if (bytes == 0) return;
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t end = bytes - 1 > max - address ? max : address + (bytes - 1);  // inclusive
  const std::uint64_t first_page = address >> kPageShift;
  const std::uint64_t last_page = end >> kPageShift;
  for (std::uint64_t page = first_page;; ++page) {
    const std::uint64_t first_word = page == first_page ? (address >> kWordShift) & 63 : 0;
    const std::uint64_t last_word = page == last_page ? (end >> kWordShift) & 63 : 63;
    touch(page, word_range(first_word, last_word));
    if (page == last_page) break;
  }
}

std::optional<PageWords> HotWordTracker::find(std::uint64_t page) const {
  const std::uint32_t e = lookup(page);
  if (e == kEmpty) return std::nullopt;
  return entries_[e];
}

std::optional<bool> HotWordTracker::is_sparse(std::uint64_t page) const {
  const auto p = find(page);
  if (!p) return std::nullopt;
  return is_sparse(*p);
}

std::vector<PageWords> HotWordTracker::pages() const {
  std::vector<PageWords> out(entries_);
  std::sort(out.begin(), out.end(), [](const PageWords& a, const PageWords& b) {
    return a.accesses != b.accesses ? a.accesses > b.accesses : a.page < b.page;
  });
  return out;
}

void HotWordTracker::reset() {
  entries_.clear();
  std::fill(index_.begin(), index_.end(), kEmpty);
}

}  // namespace cxlpool::tiering
