// SPDX-License-Identifier: Apache-2.0
// The simulated placement: which page is on the fast tier, the fast tier's
// capacity, every migration counted, and the last access time of every page
// (the LRU order a kernel's reclaim approximates, used for demotion).
#pragma once

#include <cstdint>
#include <vector>

namespace cxlpool::tiering::eval {

// A kernel zone's free-page watermarks (__setup_per_zone_wmarks()):
// low/high/promo = min + 1/2/3 x max(min / 4, pages x watermark_scale_factor / 10000),
// the distance at least 1 page as on every real zone (mm/page_alloc.c).
struct Watermarks {
  std::uint64_t min = 0, low = 0, high = 0, promo = 0;
};
Watermarks kernel_watermarks(std::uint64_t pages, double min_free_fraction = 0.001,
                             std::uint32_t watermark_scale_factor = 10);

class Tiers {
 public:
  Tiers(std::size_t pages, std::uint64_t fast_capacity);

  bool is_fast(std::uint32_t page) const { return fast_[page] != 0; }
  std::size_t pages() const { return fast_.size(); }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t used() const { return fast_list_.size(); }
  std::uint64_t free() const { return capacity_ - used(); }

  // Initial placement: not a migration. False when full or already fast.
  bool place_fast(std::uint32_t page);

  // Migrations. False (nothing changes) when the page is already there, the
  // fast tier is full, or migrations are frozen.
  bool promote(std::uint32_t page);
  bool demote(std::uint32_t page);
  // Detection runs: every page stays where it is; promote/demote refuse.
  void set_frozen(bool frozen) { frozen_ = frozen; }
  bool frozen() const { return frozen_; }

  std::uint64_t promotions() const { return promotions_; }
  std::uint64_t demotions() const { return demotions_; }

  // Updated by the simulator on every access (what page-table accessed bits
  // and the LRU lists approximate). 0 = never accessed; otherwise time + 1.
  void touch(std::uint32_t page, std::uint64_t time_ns) { last_access_[page] = time_ns + 1; }
  // True if the page was accessed at or after `since_ns`.
  bool accessed_since(std::uint32_t page, std::uint64_t since_ns) const {
    return last_access_[page] > since_ns;
  }
  std::uint64_t last_access_plus_one(std::uint32_t page) const { return last_access_[page]; }

  // Up to n fast pages, least recently accessed first.
  void coldest_fast(std::vector<std::uint32_t>& out, std::size_t n) const;
  // Reclaim by demotion (kswapd with demotion enabled): demotes the least
  // recently accessed fast pages, in batches of `batch`, until at least
  // `target_free` pages are free. Returns the pages demoted.
  std::uint64_t reclaim_to(std::uint64_t target_free, std::uint32_t batch = 32);

  const std::vector<std::uint32_t>& fast_list() const { return fast_list_; }
  // Time spent choosing LRU victims: the simulator's stand-in for the
  // kernel's reclaim, shared by every policy, so not charged to any tracker.
  std::uint64_t lru_ns() const { return lru_ns_; }

 private:
  void add_fast(std::uint32_t page);
  void remove_fast(std::uint32_t page);

  std::uint64_t capacity_;
  std::vector<std::uint8_t> fast_;
  std::vector<std::uint32_t> fast_list_;  // the fast pages, any order
  std::vector<std::uint32_t> position_;   // page -> index in fast_list_ (valid if fast)
  std::vector<std::uint64_t> last_access_;
  std::uint64_t promotions_ = 0;
  std::uint64_t demotions_ = 0;
  bool frozen_ = false;
  mutable std::uint64_t lru_ns_ = 0;
  mutable std::vector<std::uint32_t> scratch_;
};

}  // namespace cxlpool::tiering::eval
