// SPDX-License-Identifier: Apache-2.0
// DAMON-like model: region-based access sampling as kdamond does it, with
// DAMOS migrate_hot / migrate_cold schemes acting on the result.
//
//   Regions   the address space (the trace's pages in address order) split
//             into min_nr_regions equal regions at start.
//   Sampling  every sample interval, one random page per region: was it
//             accessed since the previous check (its accessed bit, cleared at
//             the check)? If so the region's nr_accesses grows by one.
//   Aggregation  every aggregation interval: neighbouring regions whose
//             nr_accesses differ by <= max/10 merge (size-weighted, up to
//             total/min_nr_regions; the threshold doubles while there are more
//             than max_nr_regions), a region's age grows while its nr_accesses
//             stays within that threshold of the last aggregation and resets
//             otherwise; schemes apply; nr_accesses restarts; then, while there
//             are at most max_nr_regions/2, every region splits in 2 (3 when
//             the count did not change) at random points (10%..90%).
//   Schemes   as the kernel's DAMON tiering sample (samples/damon/mtier.c)
//             sets them up, applied every apply interval (1 s):
//             migrate_hot: regions with nr_accesses >= 1, hottest first
//             (DAMOS hot score: nr_accesses and age, equal weights), promote
//             their slow-tier pages that pass the young filter (the page's own
//             accessed bit, cleared by the check), while the fast tier is
//             below its quota goal (99.7% used);
//             migrate_cold: regions with nr_accesses 0, coldest first, demote
//             their fast-tier pages that are not young, while the fast tier's
//             free memory is below its goal (0.5%);
//             each within 200 MiB per second. The quota goals' feedback loop
//             is modelled by its fixed point: a scheme stops as soon as its
//             goal is reached.
//
// Every page of a region shares one nr_accesses: a hot page alone among cold
// neighbours (a sparse page) is invisible, and a region's cold pages move
// with its hot ones.
#pragma once

#include <random>

#include "policy.hpp"

namespace cxlpool::tiering::eval {

struct DamonConfig {
  std::uint64_t sample_ns = 5'000'000;    // sample_us 5000
  std::uint64_t aggr_ns = 100'000'000;    // aggr_us 100000
  std::uint32_t min_nr_regions = 10;
  std::uint32_t max_nr_regions = 1000;
  std::uint64_t apply_ns = 1'000'000'000;  // apply interval of both schemes (mtier.c: 1 s)
  std::uint32_t hot_min_accesses = 1;     // migrate_hot pattern: nr_accesses >= this
  std::uint32_t cold_max_accesses = 0;    // migrate_cold pattern: nr_accesses <= this
  std::uint64_t cold_min_age_ns = 0;      // migrate_cold pattern: age at least this
  std::uint32_t promote_goal_used_bp = 9970;  // DAMOS_QUOTA_NODE_MEM_USED_BP of the fast tier
  std::uint32_t demote_goal_free_bp = 50;     // DAMOS_QUOTA_NODE_MEM_FREE_BP of the fast tier
  bool young_filter = true;               // DAMOS_FILTER_TYPE_YOUNG on both schemes
  std::uint64_t quota_bytes = 200ULL << 20;       // per scheme per quota interval (mtier.c: 200 MiB/s)
  std::uint64_t quota_reset_ns = 1'000'000'000;
  std::uint32_t weight_nr_accesses = 100;  // DAMOS quota prioritization weights (mtier.c)
  std::uint32_t weight_age = 100;
  std::uint64_t seed = 1;
};

class DamonPolicy final : public Policy {
 public:
  struct Region {
    std::uint32_t start = 0, end = 0;  // dense page indices [start, end)
    std::uint32_t nr_accesses = 0;
    std::uint32_t last_nr_accesses = 0;
    std::uint32_t age = 0;             // aggregation intervals
    std::uint32_t sample = 0;          // page whose accessed bit is checked next
    std::uint32_t size() const { return end - start; }
  };

  explicit DamonPolicy(const DamonConfig& config = {}) : config_(config), rng_(config.seed) {}
  std::string name() const override { return "damon"; }
  void start(SimContext& ctx) override;
  void observe(std::span<const Access>, SimContext&) override {}  // accessed bits are set by the MMU
  std::uint64_t next_event_ns() const override { return next_sample_ns_; }
  void on_event(SimContext& ctx) override;
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) override;
  Counters counters() const override;

  const std::vector<Region>& regions() const { return regions_; }
  std::uint32_t max_nr_accesses() const;
  // DAMOS hot score, 0..99 (damon_hot_score()).
  int hot_score(const Region& r) const;

 private:
  void aggregate(SimContext& ctx);
  void merge_regions();
  void merge_pass(std::uint32_t threshold, std::uint32_t size_limit);
  void split_regions();
  void apply_schemes(SimContext& ctx);
  void prepare(std::uint64_t now);
  // The young filter: reads and clears the page's accessed bit.
  bool check_young(std::uint32_t page, const SimContext& ctx);

  DamonConfig config_;
  std::mt19937_64 rng_;
  std::vector<Region> regions_;
  std::size_t pages_ = 0;
  std::uint64_t next_sample_ns_ = kNever;
  std::uint64_t prepared_at_ = 0;
  std::uint32_t samples_in_aggr_ = 0;
  std::size_t last_nr_regions_ = 0;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> hot_ranking_;  // last aggregation's hot regions
  // A page's accessed bit is set when it is accessed after cleared_at_
  // (cleared by DAMON's sampling and by the young filter's checks).
  bool young(std::uint32_t page, const SimContext& ctx) const {
    return ctx.tiers.accessed_since(page, cleared_at_[page]);
  }
  std::vector<std::uint64_t> cleared_at_;
  std::uint64_t next_apply_ns_ = 0;
  std::uint64_t quota_start_ = 0, hot_charged_ = 0, cold_charged_ = 0;
  std::uint64_t samples_ = 0, aggregations_ = 0, region_sum_ = 0, promoted_ = 0, demoted_cold_ = 0,
                quota_stops_ = 0, filtered_ = 0, goal_stops_ = 0;
};

}  // namespace cxlpool::tiering::eval
