// SPDX-License-Identifier: Apache-2.0
#include "tiers.hpp"

#include <algorithm>
#include <chrono>

namespace cxlpool::tiering::eval {

Watermarks kernel_watermarks(std::uint64_t pages, double min_free_fraction, std::uint32_t watermark_scale_factor) {
  Watermarks w;
  w.min = static_cast<std::uint64_t>(min_free_fraction * static_cast<double>(pages) + 0.999999);
  // The kernel's distance is never 0 on a real zone (min_free_kbytes is at
  // least 128 KiB, so min / 4 >= 8 pages); a scaled-down fast tier below
  // 1000 pages would get 0 here, which makes high == promo: kswapd stops at
  // promo + 1 free pages while a promotion needs more than high + 1, and
  // promotion stops for good. At least 1 page keeps min < low < high < promo.
  const std::uint64_t dist =
      std::max<std::uint64_t>({w.min / 4, pages * watermark_scale_factor / 10000, std::uint64_t{1}});
  w.low = w.min + dist;
  w.high = w.min + 2 * dist;
  w.promo = w.min + 3 * dist;
  return w;
}

Tiers::Tiers(std::size_t pages, std::uint64_t fast_capacity)
    : capacity_(std::min<std::uint64_t>(fast_capacity, pages)),
      fast_(pages, 0),
      position_(pages, 0),
      last_access_(pages, 0) {
  fast_list_.reserve(capacity_);
}

void Tiers::add_fast(std::uint32_t page) {
  fast_[page] = 1;
  position_[page] = static_cast<std::uint32_t>(fast_list_.size());
  fast_list_.push_back(page);
}

void Tiers::remove_fast(std::uint32_t page) {
  fast_[page] = 0;
  const std::uint32_t at = position_[page];
  const std::uint32_t last = fast_list_.back();
  fast_list_[at] = last;
  position_[last] = at;
  fast_list_.pop_back();
}

bool Tiers::place_fast(std::uint32_t page) {
  if (fast_[page] || used() >= capacity_) return false;
  add_fast(page);
  return true;
}

bool Tiers::promote(std::uint32_t page) {
  if (frozen_ || fast_[page] || used() >= capacity_) return false;
  add_fast(page);
  ++promotions_;
  return true;
}

bool Tiers::demote(std::uint32_t page) {
  if (frozen_ || !fast_[page]) return false;
  remove_fast(page);
  ++demotions_;
  return true;
}

void Tiers::coldest_fast(std::vector<std::uint32_t>& out, std::size_t n) const {
  out.clear();
  n = std::min(n, fast_list_.size());
  if (n == 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  scratch_ = fast_list_;
  auto colder = [this](std::uint32_t a, std::uint32_t b) {
    return last_access_[a] != last_access_[b] ? last_access_[a] < last_access_[b] : a < b;
  };
  if (n < scratch_.size()) std::nth_element(scratch_.begin(), scratch_.begin() + n, scratch_.end(), colder);
  std::sort(scratch_.begin(), scratch_.begin() + n, colder);
  out.assign(scratch_.begin(), scratch_.begin() + n);
  lru_ns_ += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

std::uint64_t Tiers::reclaim_to(std::uint64_t target_free, std::uint32_t batch) {
  if (frozen_ || free() >= target_free) return 0;
  std::uint64_t need = target_free - free();
  if (batch > 1) need = (need + batch - 1) / batch * batch;
  std::vector<std::uint32_t> victims;
  coldest_fast(victims, need);
  std::uint64_t moved = 0;
  for (auto p : victims) moved += demote(p) ? 1 : 0;
  return moved;
}

}  // namespace cxlpool::tiering::eval
