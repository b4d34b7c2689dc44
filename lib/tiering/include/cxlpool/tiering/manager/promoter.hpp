// SPDX-License-Identifier: Apache-2.0
// Promoter: which pages move in a promotion period.
//
// Promotion candidates are the nominations on the slow tier, ranked by
// expected benefit: their hotness score, discounted by kSparseBenefit for a
// sparse page in HPT-driven mode unless promote_sparse (moving 4 KiB for a
// few hot words buys less per migrated byte, M5's reason to classify; a
// sparse page much hotter than what it displaces still moves). HWT-driven
// mode exists for sparse hot pages and does not discount them. A candidate
// needs a benefit of at least min_accesses (over the hotness window).
// The plan is bounded by
//   - the batch size (grown under guideline 1 by the Elector),
//   - the migration budget in the token bucket: every page moved either way
//     costs 4 KiB, charged when the plan is made (confirm() refunds what did
//     not move),
//   - fast-tier room: promotions fill the fast tier up to high_watermark x
//     capacity; beyond that each promotion swaps out one cold fast page.
//     Used pages already above the high watermark are first demoted down to
//     low_watermark x capacity (the proactive floor of free pages).
// Demotion victims come from PlacementView::fast_pages ranked by the
// hotness table (unknown pages first). Pages nominated this epoch are never
// demoted. A swap needs a clear gap: the victim's score times kSwapGap must
// stay below the benefit of every candidate promoted, so two pages of about
// the same hotness never trade places back and forth; and the candidate must
// be worth at least PromoterInput::swap_min_benefit (the manager passes the
// score of an average fast page), because a fast page's own score is often
// unknown -- a tracker that sees only slow-tier traffic never scores it --
// and "unknown" must not read as "cold": LRU order alone cannot tell a page
// used now and then from a dead one, so a swap for a merely warm candidate
// can cost more than it gains.
// When the caller scans the fast tier's accessed bits
// (PromoterInput::activity), fast pages are no longer unknown: victims are
// the whole fast tier ranked by the epochs they were active in recently
// (fewest first, the caller's order breaking ties), and a swap needs every
// candidate promoted to have been active in more recent epochs than its
// victim by kActivityGap x victim + kActivityMargin (hysteresis: a page as
// busy as the one it would displace stays where it is; the pair's accesses
// per epoch are not comparable, one tier's being counted, the other's only
// seen). The swap bar from the average fast page then no longer applies.
// Demotions a tier above
// its high watermark needs ignore that rule: the watermark is a hard limit.
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
inline constexpr std::size_t kMinVictimScan = 64;
// Victims are looked for among the kVictimScanFactor x needed pages the
// caller lists first (its own coldest-first order, e.g. LRU), so the
// hotness table refines that order rather than overriding it: the table may
// not see fast-tier traffic at all, and then a page it has no score for is
// not necessarily cold.
inline constexpr std::size_t kVictimScanFactor = 2;
// Expected benefit of a sparse page relative to a dense one of equal count.
inline constexpr double kSparseBenefit = 0.5;
// A swap demotes a fast page only when a candidate is this many times hotter.
inline constexpr double kSwapGap = 2.0;
// With the fast-tier activity signal: a candidate must have been active in
// at least kActivityGap x its victim's recent epochs + kActivityMargin
// (in HotnessTable score units: about 12 for a page active every epoch).
inline constexpr double kActivityGap = 1.0;
inline constexpr double kActivityMargin = 0.25;

struct PromoterInput {
  // Located; slow-tier ones are candidates, every one is kept off the
  // demotion list. Order is irrelevant: candidates are ranked by benefit.
  std::span<const Nomination> nominations;
  TierUsage fast;
  std::uint64_t batch_pages = 0;
  std::uint32_t epoch = 0;  // hotness-table epoch
  double swap_min_benefit = 0;  // hotness-score units: a swap's candidate needs more
  // Epochs each page was active in (both tiers), when the caller scans the
  // fast tier's accessed bits; null: no fast-tier signal.
  const HotnessTable* activity = nullptr;
};

// A candidate's expected benefit (hotness score, sparse discount applied).
double promotion_benefit(const Nomination& n, double score, const M5Config& config);

struct PromoterResult {
  MigrationPlan plan;
  bool promotions_deferred = false;  // the budget cut promotions
  bool demotions_deferred = false;   // the budget cut demotions
  std::uint64_t pressure_demotions = 0;  // of plan.demote, those the high watermark forced
};

// Plans one promotion period and charges the bucket for it.
PromoterResult plan_migrations(const PromoterInput& input, const M5Config& config, const PlacementView& placement,
                               const HotnessTable& hotness, TokenBucket& bucket);

}  // namespace cxlpool::tiering::manager
