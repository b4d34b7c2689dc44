// SPDX-License-Identifier: Apache-2.0
// A test-local placement: pages on the fast tier are a set with a capacity;
// every other page is on the slow tier. Applies plans the way the daemon
// does -- a promotion fails when the fast tier is full.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::tiering::testing {

inline PageKey trace_page(std::uint64_t n) { return PageKey{hal::AddressSpace::kTrace, 0, n << 12}; }

class FakePlacement final : public PlacementView {
 public:
  explicit FakePlacement(std::uint64_t capacity) : capacity_(capacity) {}

  TierLocation locate(const PageKey& page) const override {
    return slot_.count(page) != 0 ? TierLocation::kFast : TierLocation::kSlow;
  }
  void fast_pages(std::vector<PageKey>& out, std::size_t max) const override {
    ++fast_pages_calls_;
    for (std::size_t i = 0; i < fast_.size() && out.size() < max; ++i) out.push_back(fast_[i]);
  }

  bool add_fast(const PageKey& page) {
    if (fast_.size() >= capacity_ || slot_.count(page) != 0) return false;
    slot_[page] = fast_.size();
    fast_.push_back(page);
    return true;
  }
  bool remove_fast(const PageKey& page) {
    const auto it = slot_.find(page);
    if (it == slot_.end()) return false;
    const std::size_t i = it->second;
    slot_.erase(it);
    if (i + 1 != fast_.size()) {
      fast_[i] = fast_.back();
      slot_[fast_[i]] = i;
    }
    fast_.pop_back();
    return true;
  }
  bool is_fast(const PageKey& page) const { return slot_.count(page) != 0; }

  // Demotions first (they make the room), then promotions while room lasts.
  void apply(const MigrationPlan& plan, std::vector<PageKey>& promoted, std::vector<PageKey>& demoted) {
    promoted.clear();
    demoted.clear();
    for (const PageKey& p : plan.demote) {
      if (remove_fast(p)) demoted.push_back(p);
    }
    for (const PageKey& p : plan.promote) {
      if (add_fast(p)) promoted.push_back(p);
    }
  }

  TierUsage fast_usage() const { return TierUsage{capacity_, fast_.size(), 0}; }
  TierUsage slow_usage(std::uint64_t footprint) const {
    return TierUsage{footprint, footprint - std::min<std::uint64_t>(footprint, fast_.size()), 0};
  }
  std::uint64_t used() const { return fast_.size(); }
  std::uint64_t capacity() const { return capacity_; }
  std::size_t fast_pages_calls() const { return fast_pages_calls_; }

 private:
  std::uint64_t capacity_;
  std::vector<PageKey> fast_;
  std::unordered_map<PageKey, std::size_t, PageKeyHash> slot_;
  mutable std::size_t fast_pages_calls_ = 0;
};

}  // namespace cxlpool::tiering::testing
