// SPDX-License-Identifier: Apache-2.0
// Promoter: which pages move in a promotion period.
//
// Promotion candidates are the nominations on the slow tier, hottest first
// (sparse ones only when promote_sparse, or always in HWT-driven mode). The
// plan is bounded by
//   - the batch size (grown under guideline 1 by the Elector),
//   - the migration budget in the token bucket: every page moved either way
//     costs 4 KiB, charged when the plan is made (confirm() refunds what did
//     not move),
//   - fast-tier room: while fast used + promotions stays at or below
//     high_watermark x capacity nothing is demoted; past it, the coldest
//     fast pages are demoted until used is back at low_watermark x capacity.
// Demotion victims come from PlacementView::fast_pages ranked by the
// hotness table (unknown pages first). Pages nominated this epoch are never
// demoted, nor is a page demoted that is at least as hot as the candidate it
// would make room for -- swapping it for a colder one only churns. Demotions
// a full tier needs without any promotion (used already above the high
// watermark) ignore that rule: the watermark is a hard limit.
// A fast tier of capacity 0 takes no promotions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/tiering/m5_manager.hpp"
#include "cxlpool/tiering/manager/hotness_table.hpp"
#include "cxlpool/tiering/manager/token_bucket.hpp"

namespace cxlpool::tiering::manager {

inline constexpr std::uint64_t kPageBytes = 4096;
// At most this many fast pages are asked for when looking for victims.
inline constexpr std::size_t kMaxVictimScan = std::size_t{1} << 20;
inline constexpr std::size_t kMinVictimScan = 4096;

struct PromoterInput {
  std::span<const Nomination> nominations;  // hottest first, located
  TierUsage fast;
  std::uint64_t batch_pages = 0;
  std::uint32_t epoch = 0;  // hotness-table epoch
};

struct PromoterResult {
  MigrationPlan plan;
  bool promotions_deferred = false;  // the budget cut promotions
  bool demotions_deferred = false;   // the budget cut demotions
};

// Plans one promotion period and charges the bucket for it.
PromoterResult plan_migrations(const PromoterInput& input, const M5Config& config, const PlacementView& placement,
                               const HotnessTable& hotness, TokenBucket& bucket);

}  // namespace cxlpool::tiering::manager
