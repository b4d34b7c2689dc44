// SPDX-License-Identifier: Apache-2.0
#include "reference_policies.hpp"

#include <algorithm>

#include "simulator.hpp"

namespace cxlpool::tiering::eval {

namespace {

// The first `k` of `pages` by count, descending (ties by lower page index), in place.
void keep_top(std::vector<std::uint32_t>& pages, const std::vector<std::uint32_t>& counts, std::size_t k) {
  auto hotter = [&counts](std::uint32_t a, std::uint32_t b) {
    return counts[a] != counts[b] ? counts[a] > counts[b] : a < b;
  };
  if (k < pages.size()) {
    std::nth_element(pages.begin(), pages.begin() + k, pages.end(), hotter);
    pages.resize(k);
  }
  std::sort(pages.begin(), pages.end(), hotter);
}

}  // namespace

void OraclePolicy::start(SimContext& ctx) {
  counts_.assign(ctx.trace.pages(), 0);
  wanted_.assign(ctx.trace.pages(), 0);
  place_epoch(ctx);
}

void OraclePolicy::on_event(SimContext& ctx) { place_epoch(ctx); }

void OraclePolicy::place_epoch(SimContext& ctx) {
  const std::uint64_t period = ctx.config.oracle_epoch_ns ? ctx.config.oracle_epoch_ns : ctx.config.epoch_ns;
  next_epoch_ns_ = ctx.now_ns + period;
  const bool next = window_ == OracleWindow::kNext;
  const std::uint64_t begin = next ? ctx.now_ns : (ctx.now_ns > period ? ctx.now_ns - period : 0);
  const std::uint64_t end = next ? ctx.now_ns + period : ctx.now_ns;
  const auto& acc = ctx.trace.accesses;
  while (cursor_ < acc.size() && acc[cursor_].time_ns < begin) ++cursor_;
  touched_.clear();
  for (std::size_t i = cursor_; i < acc.size() && acc[i].time_ns < end; ++i)
    if (counts_[acc[i].page]++ == 0) touched_.push_back(acc[i].page);
  keep_top(touched_, counts_, ctx.tiers.capacity());
  for (auto p : touched_) wanted_[p] = 1;

  // Fewest moves: demote only as many unwanted pages as wanted pages need room.
  std::size_t missing = 0;
  for (auto p : touched_) missing += ctx.tiers.is_fast(p) ? 0 : 1;
  const std::size_t room = ctx.tiers.free();
  if (missing > room) {
    std::size_t to_free = missing - room;
    std::vector<std::uint32_t> victims;
    for (auto p : ctx.tiers.fast_list()) {
      if (to_free == 0) break;
      if (!wanted_[p]) {
        victims.push_back(p);
        --to_free;
      }
    }
    for (auto p : victims) ctx.tiers.demote(p);
  }
  for (auto p : touched_) ctx.tiers.promote(p);

  for (auto p : touched_) wanted_[p] = 0;
  for (std::size_t i = cursor_; i < acc.size() && acc[i].time_ns < end; ++i) counts_[acc[i].page] = 0;
}

bool OraclePolicy::hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) {
  if (window_ == OracleWindow::kLast) return false;  // a placement bound, not a detector
  out = *ctx.epoch_pages;
  keep_top(out, *ctx.epoch_counts, k);
  return true;
}

}  // namespace cxlpool::tiering::eval
