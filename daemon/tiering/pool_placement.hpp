// SPDX-License-Identifier: Apache-2.0
// Where the tiering engine's pages are: a pool page lives on its region's
// tier unless the engine moved it, a process page where the last move_pages
// query or move found it. The M5 manager reads this view; the service
// updates it with every move the kernel confirmed.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "../region_pool.hpp"
#include "cxlpool/tiering/m5_manager.hpp"

namespace cxlpool::daemon {

// The two tiers the engine moves pages between.
struct TierPair {
  uint32_t fast = 0;
  uint32_t slow = 0;
};

// The configured pair (by name), or the default: the first dram tier and the
// first cxl tier, else the first emulated one. ENOENT with the reason when
// there is no such pair or a name is unknown.
Result<TierPair> choose_tier_pair(const std::vector<Tier>& tiers, const std::string& fast_name,
                                  const std::string& slow_name);

// Why pages cannot move between the pair's tiers (empty: they can): an
// emulated tier has no NUMA node of its own, and two tiers on one node
// leave nothing to move.
std::string move_blocker(const Tier& fast, const Tier& slow, bool have_placement);

class PoolPlacement final : public tiering::PlacementView {
 public:
  PoolPlacement(const RegionPool& pool, TierPair pair) : pool_(pool), pair_(pair) {}

  tiering::TierLocation locate(const tiering::PageKey& page) const override;
  // Pages the engine promoted first, then the pages of regions on the fast
  // tier, then process pages last seen there.
  void fast_pages(std::vector<tiering::PageKey>& out, std::size_t max) const override;

  // The tier of a node, for process pages: fast, slow or unknown.
  tiering::TierLocation location_of_node(int node) const;
  // A process page's node as move_pages reported it (negative: not present).
  void note_process_page(const tiering::PageKey& page, int node);
  // A move the kernel confirmed.
  void record_move(const tiering::PageKey& page, tiering::TierLocation to);

  // Drops what refers to regions that are gone or were migrated as a whole
  // since, and caps the process-page table. Call once per epoch.
  void prune();

  // Pool pages on `location` beyond what the region accounting says: pages
  // promoted out of slow-tier regions count on the fast tier, and so on.
  int64_t net_moved_pages(tiering::TierLocation location) const;
  // Used and capacity pages of the pair's tiers, with the moves applied.
  tiering::TierUsage usage(tiering::TierLocation location) const;

  // The pool tier id a page is on now; proto::kNoTier when unknown.
  uint32_t tier_of(const tiering::PageKey& page) const;

  const TierPair& pair() const { return pair_; }
  size_t moved_pool_pages() const;
  size_t process_pages() const { return process_.size(); }

 private:
  struct RegionMoves {
    uint32_t region_tier = 0;  // the region's tier when the moves were made
    std::unordered_map<uint64_t, tiering::TierLocation> pages;  // page offset -> where
  };
  tiering::TierLocation location_of_tier(uint32_t tier_id) const;

  const RegionPool& pool_;
  TierPair pair_;
  std::unordered_map<uint64_t, RegionMoves> moved_;  // region id -> its moved pages
  std::unordered_map<tiering::PageKey, int, tiering::PageKeyHash> process_;  // page -> node
};

}  // namespace cxlpool::daemon
