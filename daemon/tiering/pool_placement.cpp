// SPDX-License-Identifier: Apache-2.0
#include "pool_placement.hpp"

#include <algorithm>

namespace cxlpool::daemon {
namespace {

using tiering::PageKey;
using tiering::TierLocation;

constexpr uint64_t kPage = hal::kAccessPageBytes;
// Process pages are remembered only as long as they are hot; a table this
// large means the sources report far more than the engine can move.
constexpr size_t kMaxProcessPages = 1u << 20;

const Tier* tier_named(const std::vector<Tier>& tiers, const std::string& name) {
  for (const auto& t : tiers) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string tier_names(const std::vector<Tier>& tiers) {
  std::string names;
  for (const auto& t : tiers) names += (names.empty() ? "" : ", ") + t.name + " (" + tier_kind_name(t.kind) + ")";
  return names.empty() ? "none" : names;
}

}  // namespace

Result<TierPair> choose_tier_pair(const std::vector<Tier>& tiers, const std::string& fast_name,
                                  const std::string& slow_name) {
  const Tier* fast = nullptr;
  const Tier* slow = nullptr;
  if (!fast_name.empty()) {
    fast = tier_named(tiers, fast_name);
    if (fast == nullptr) return fail(ENOENT, "tiering.fast_tier: no tier '" + fast_name + "' (tiers: " + tier_names(tiers) + ")");
  } else {
    for (const auto& t : tiers) {
      if (t.kind == proto::TierKind::kDram) {
        fast = &t;
        break;
      }
    }
    if (fast == nullptr) return fail(ENOENT, "no dram tier to use as the fast tier (tiers: " + tier_names(tiers) + ")");
  }
  if (!slow_name.empty()) {
    slow = tier_named(tiers, slow_name);
    if (slow == nullptr) return fail(ENOENT, "tiering.slow_tier: no tier '" + slow_name + "' (tiers: " + tier_names(tiers) + ")");
  } else {
    for (auto kind : {proto::TierKind::kCxl, proto::TierKind::kEmulated}) {
      for (const auto& t : tiers) {
        if (t.kind == kind && &t != fast) {
          slow = &t;
          break;
        }
      }
      if (slow != nullptr) break;
    }
    if (slow == nullptr) {
      return fail(ENOENT, "no cxl or emulated tier to use as the slow tier (tiers: " + tier_names(tiers) + ")");
    }
  }
  if (fast == slow) return fail(ENOENT, "the fast and the slow tier are both '" + fast->name + "'");
  return TierPair{fast->id, slow->id};
}

std::string move_blocker(const Tier& fast, const Tier& slow, bool have_placement) {
  if (!have_placement) return "no NUMA placement backend: pages cannot be moved between nodes";
  for (const Tier* t : {&fast, &slow}) {
    if (!t->own_node || t->numa_node < 0) {
      return "tier '" + t->name + "' is " + tier_kind_name(t->kind) +
             " without a NUMA node of its own: its pages cannot be moved by move_pages";
    }
  }
  if (fast.numa_node == slow.numa_node) {
    return "tiers '" + fast.name + "' and '" + slow.name + "' share NUMA node " + std::to_string(fast.numa_node);
  }
  return {};
}

TierLocation PoolPlacement::location_of_tier(uint32_t tier_id) const {
  if (tier_id == pair_.fast) return TierLocation::kFast;
  if (tier_id == pair_.slow) return TierLocation::kSlow;
  return TierLocation::kUnknown;
}

TierLocation PoolPlacement::location_of_node(int node) const {
  if (node < 0) return TierLocation::kUnknown;
  const auto& tiers = pool_.tiers();
  for (auto [id, where] : {std::pair{pair_.fast, TierLocation::kFast}, {pair_.slow, TierLocation::kSlow}}) {
    const Tier& t = tiers.at(id);
    if (t.own_node && t.numa_node == node) return where;
  }
  return TierLocation::kUnknown;
}

TierLocation PoolPlacement::locate(const PageKey& page) const {
  switch (page.space) {
    case hal::AddressSpace::kPoolRegion: {
      const Region* region = pool_.find(page.owner);
      if (region == nullptr || region->destroy_pending || region->hugetlb || page.address >= region->size) {
        return TierLocation::kUnknown;
      }
      if (auto it = moved_.find(page.owner); it != moved_.end() && it->second.region_tier == region->tier_id) {
        if (auto p = it->second.pages.find(page.address); p != it->second.pages.end()) return p->second;
      }
      return location_of_tier(region->tier_id);
    }
    case hal::AddressSpace::kProcess: {
      auto it = process_.find(page);
      return it == process_.end() ? TierLocation::kUnknown : location_of_node(it->second);
    }
    default:
      return TierLocation::kUnknown;
  }
}

uint32_t PoolPlacement::tier_of(const PageKey& page) const {
  switch (locate(page)) {
    case TierLocation::kFast: return pair_.fast;
    case TierLocation::kSlow: return pair_.slow;
    case TierLocation::kUnknown: break;
  }
  if (page.space == hal::AddressSpace::kPoolRegion) {
    if (const Region* region = pool_.find(page.owner)) return region->tier_id;
  }
  return proto::kNoTier;
}

void PoolPlacement::fast_pages(std::vector<PageKey>& out, std::size_t max) const {
  const size_t start = out.size();
  auto room = [&] { return out.size() - start < max; };
  for (const auto& [region_id, moves] : moved_) {
    const Region* region = pool_.find(region_id);
    if (region == nullptr || region->tier_id != moves.region_tier) continue;
    for (const auto& [offset, where] : moves.pages) {
      if (!room()) return;
      if (where == TierLocation::kFast) out.push_back({hal::AddressSpace::kPoolRegion, region_id, offset});
    }
  }
  for (const auto& [region_id, region] : pool_.regions()) {
    // Daemon-owned regions (the KV store's arenas) do their own tiering.
    if (region->tier_id != pair_.fast || region->hugetlb || region->destroy_pending || region->system) continue;
    const RegionMoves* moves = nullptr;
    if (auto it = moved_.find(region_id); it != moved_.end() && it->second.region_tier == region->tier_id) {
      moves = &it->second;
    }
    for (uint64_t offset = 0; offset < region->size; offset += kPage) {
      if (!room()) return;
      if (moves != nullptr && moves->pages.count(offset) != 0) continue;  // listed above, or demoted
      out.push_back({hal::AddressSpace::kPoolRegion, region_id, offset});
    }
  }
  for (const auto& [page, node] : process_) {
    if (!room()) return;
    if (location_of_node(node) == TierLocation::kFast) out.push_back(page);
  }
}

void PoolPlacement::note_process_page(const PageKey& page, int node) {
  if (node < 0) {
    process_.erase(page);
    return;
  }
  process_[page] = node;
}

void PoolPlacement::record_move(const PageKey& page, TierLocation to) {
  if (page.space == hal::AddressSpace::kProcess) {
    const Tier& t = pool_.tiers().at(to == TierLocation::kFast ? pair_.fast : pair_.slow);
    process_[page] = t.numa_node;
    return;
  }
  if (page.space != hal::AddressSpace::kPoolRegion) return;
  const Region* region = pool_.find(page.owner);
  if (region == nullptr) return;
  RegionMoves& moves = moved_[page.owner];
  if (moves.region_tier != region->tier_id) {
    moves.pages.clear();
    moves.region_tier = region->tier_id;
  }
  // Back on the region's own tier: nothing left to remember.
  if (location_of_tier(region->tier_id) == to) {
    moves.pages.erase(page.address);
  } else {
    moves.pages[page.address] = to;
  }
  if (moves.pages.empty()) moved_.erase(page.owner);
}

void PoolPlacement::prune() {
  for (auto it = moved_.begin(); it != moved_.end();) {
    const Region* region = pool_.find(it->first);
    if (region == nullptr || region->destroy_pending || region->tier_id != it->second.region_tier) {
      it = moved_.erase(it);
    } else {
      ++it;
    }
  }
  if (process_.size() > kMaxProcessPages) process_.clear();
}

int64_t PoolPlacement::net_moved_pages(TierLocation location) const {
  int64_t net = 0;
  for (const auto& [region_id, moves] : moved_) {
    const Region* region = pool_.find(region_id);
    if (region == nullptr || region->tier_id != moves.region_tier) continue;
    const TierLocation home = location_of_tier(region->tier_id);
    for (const auto& [offset, where] : moves.pages) {
      if (where == location && home != location) ++net;
      if (home == location && where != location) --net;
    }
  }
  return net;
}

size_t PoolPlacement::moved_pool_pages() const {
  size_t n = 0;
  for (const auto& [id, moves] : moved_) n += moves.pages.size();
  return n;
}

tiering::TierUsage PoolPlacement::usage(TierLocation location) const {
  tiering::TierUsage usage;
  if (location == TierLocation::kUnknown) return usage;
  const Tier& t = pool_.tiers().at(location == TierLocation::kFast ? pair_.fast : pair_.slow);
  usage.capacity_pages = t.capacity / kPage;
  const int64_t used = static_cast<int64_t>(t.used / kPage) + net_moved_pages(location);
  usage.used_pages = used > 0 ? static_cast<uint64_t>(used) : 0;
  return usage;
}

}  // namespace cxlpool::daemon
