// SPDX-License-Identifier: Apache-2.0
#include "damon_policy.hpp"

#include <algorithm>
#include <cstdlib>

#include "simulator.hpp"

namespace cxlpool::tiering::eval {

namespace {
constexpr int kMaxSubscore = 100;  // DAMON_MAX_SUBSCORE
constexpr int kMaxAgeInLog = 32;   // DAMON_MAX_AGE_IN_LOG
constexpr int kMaxScore = 99;      // DAMOS_MAX_SCORE

std::uint32_t abs_diff(std::uint32_t a, std::uint32_t b) { return a > b ? a - b : b - a; }
}  // namespace

std::uint32_t DamonPolicy::max_nr_accesses() const {
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(config_.aggr_ns / config_.sample_ns, 1));
}

int DamonPolicy::hot_score(const Region& r) const {
  const int freq = static_cast<int>(r.nr_accesses * kMaxSubscore / max_nr_accesses());
  std::uint64_t age_in_sec = static_cast<std::uint64_t>(r.age) * config_.aggr_ns / 1'000'000'000;
  int age_in_log = 0;
  for (; age_in_log < kMaxAgeInLog && age_in_sec; ++age_in_log) age_in_sec >>= 1;
  // With no accesses, the older the colder.
  if (freq == 0) age_in_log = -age_in_log;
  age_in_log += kMaxAgeInLog;
  const int age = age_in_log * kMaxSubscore / kMaxAgeInLog / 2;
  const int wf = static_cast<int>(config_.weight_nr_accesses), wa = static_cast<int>(config_.weight_age);
  if (wf + wa == 0) return 0;
  const int hotness = (wf * freq + wa * age) / (wf + wa);
  return hotness * kMaxScore / kMaxSubscore;
}

void DamonPolicy::start(SimContext& ctx) {
  pages_ = ctx.trace.pages();
  regions_.clear();
  const std::size_t n = std::clamp<std::size_t>(config_.min_nr_regions, 1, pages_);
  for (std::size_t i = 0; i < n; ++i) {
    Region r;
    r.start = static_cast<std::uint32_t>(pages_ * i / n);
    r.end = static_cast<std::uint32_t>(pages_ * (i + 1) / n);
    regions_.push_back(r);
  }
  quota_start_ = ctx.trace.start_ns;
  next_apply_ns_ = ctx.trace.start_ns + config_.apply_ns;
  cleared_at_.assign(pages_, 0);
  prepare(ctx.trace.start_ns);
  next_sample_ns_ = ctx.trace.start_ns + config_.sample_ns;
}

void DamonPolicy::prepare(std::uint64_t now) {
  for (Region& r : regions_) {
    r.sample = r.start + static_cast<std::uint32_t>(rng_() % r.size());
    cleared_at_[r.sample] = now;  // mkold
  }
  prepared_at_ = now;
}

bool DamonPolicy::check_young(std::uint32_t page, const SimContext& ctx) {
  const bool y = young(page, ctx);
  if (y) cleared_at_[page] = ctx.now_ns;
  return y;
}

void DamonPolicy::on_event(SimContext& ctx) {
  // check_accesses(): the accessed bit of each region's sampled page.
  const std::uint32_t max = max_nr_accesses();
  for (Region& r : regions_)
    if (young(r.sample, ctx) && r.nr_accesses < max) ++r.nr_accesses;
  samples_ += regions_.size();
  if (++samples_in_aggr_ >= max) {
    samples_in_aggr_ = 0;
    aggregate(ctx);
  }
  prepare(ctx.now_ns);
  next_sample_ns_ += config_.sample_ns;
}

void DamonPolicy::aggregate(SimContext& ctx) {
  ++aggregations_;
  merge_regions();
  region_sum_ += regions_.size();

  // What DAMON calls hot now: the migrate_hot pattern, in DAMOS priority order.
  std::vector<const Region*> hot;
  for (const Region& r : regions_)
    if (r.nr_accesses >= config_.hot_min_accesses) hot.push_back(&r);
  std::stable_sort(hot.begin(), hot.end(), [this](const Region* a, const Region* b) {
    const int sa = hot_score(*a), sb = hot_score(*b);
    if (sa != sb) return sa > sb;
    return a->nr_accesses > b->nr_accesses;
  });
  hot_ranking_.clear();
  for (const Region* r : hot) hot_ranking_.emplace_back(r->start, r->end);

  if (ctx.now_ns >= next_apply_ns_) {
    next_apply_ns_ += config_.apply_ns;
    apply_schemes(ctx);
  }
  for (Region& r : regions_) {
    r.last_nr_accesses = r.nr_accesses;
    r.nr_accesses = 0;
  }
  split_regions();
}

void DamonPolicy::merge_regions() {
  const std::uint32_t max = max_nr_accesses();
  std::uint32_t threshold = std::max<std::uint32_t>(1, max / 10);
  const auto size_limit = static_cast<std::uint32_t>(
      std::max<std::size_t>(1, pages_ / std::max<std::uint32_t>(config_.min_nr_regions, 1)));
  do {
    merge_pass(threshold, size_limit);
    threshold = std::max<std::uint32_t>(1, threshold * 2);
  } while (regions_.size() > config_.max_nr_regions && threshold / 2 < max);
}

void DamonPolicy::merge_pass(std::uint32_t threshold, std::uint32_t size_limit) {
  std::vector<Region> out;
  out.reserve(regions_.size());
  for (Region r : regions_) {
    if (abs_diff(r.nr_accesses, r.last_nr_accesses) > threshold)
      r.age = 0;
    else
      ++r.age;
    if (!out.empty()) {
      Region& l = out.back();
      if (l.end == r.start && abs_diff(l.nr_accesses, r.nr_accesses) <= threshold &&
          l.size() + r.size() <= size_limit) {
        const std::uint64_t sl = l.size(), sr = r.size();
        l.nr_accesses = static_cast<std::uint32_t>((l.nr_accesses * sl + r.nr_accesses * sr) / (sl + sr));
        l.age = static_cast<std::uint32_t>((l.age * sl + r.age * sr) / (sl + sr));
        l.end = r.end;
        continue;
      }
    }
    out.push_back(r);
  }
  regions_.swap(out);
}

void DamonPolicy::split_regions() {
  const std::size_t n = regions_.size();
  if (n > config_.max_nr_regions / 2) return;
  std::uint32_t subregions = 2;
  // Maybe the middle of a region differs: three pieces when nothing changed.
  if (last_nr_regions_ == n && n < config_.max_nr_regions / 3) subregions = 3;
  std::vector<Region> out;
  out.reserve(n * subregions);
  for (const Region& r : regions_) {
    // Splits the left part repeatedly: r -> [left | right], then left again.
    std::vector<Region> right;
    Region left = r;
    for (std::uint32_t i = 0; i + 1 < subregions && left.size() > 2; ++i) {
      const std::uint32_t size = left.size();
      const auto sub = static_cast<std::uint32_t>((1 + rng_() % 9) * static_cast<std::uint64_t>(size) / 10);
      if (sub == 0 || sub >= size) continue;
      Region piece = left;
      piece.start = left.start + sub;
      left.end = left.start + sub;
      right.push_back(piece);
    }
    out.push_back(left);
    for (auto it = right.rbegin(); it != right.rend(); ++it) out.push_back(*it);
  }
  regions_.swap(out);
  last_nr_regions_ = n;
}

void DamonPolicy::apply_schemes(SimContext& ctx) {
  if (ctx.now_ns - quota_start_ >= config_.quota_reset_ns) {
    quota_start_ = ctx.now_ns;
    hot_charged_ = cold_charged_ = 0;
  }
  Tiers& tiers = ctx.tiers;
  const std::uint64_t cap = std::max<std::uint64_t>(tiers.capacity(), 1);
  const std::uint64_t cold_min_age = config_.cold_min_age_ns / std::max<std::uint64_t>(config_.aggr_ns, 1);
  auto free_goal_met = [&] { return tiers.free() * 10000 >= config_.demote_goal_free_bp * cap; };
  auto used_goal_met = [&] { return tiers.used() * 10000 >= config_.promote_goal_used_bp * cap; };

  // migrate_cold: the room migrate_hot fills.
  std::vector<const Region*> cold;
  for (const Region& r : regions_)
    if (r.nr_accesses <= config_.cold_max_accesses && r.age >= cold_min_age) cold.push_back(&r);
  std::stable_sort(cold.begin(), cold.end(),
                   [this](const Region* a, const Region* b) { return hot_score(*a) < hot_score(*b); });
  // One scheme's walk over a range, as DAMOS applies its action page by
  // page: it stops at its goal or when its quota is spent; a page the young
  // filter keeps out (migrate_cold keeps young pages, migrate_hot old ones)
  // is charged to the quota but not moved. False once the scheme stopped.
  auto walk = [&](std::uint32_t start, std::uint32_t end, bool to_fast, const auto& goal_met,
                  std::uint64_t& charged, std::uint64_t& moved) {
    for (std::uint32_t p = start; p < end; ++p) {
      if (tiers.is_fast(p) == to_fast) continue;
      if (goal_met()) {
        ++goal_stops_;
        return false;
      }
      if (charged + kPageBytes > config_.quota_bytes) {
        ++quota_stops_;
        return false;
      }
      charged += kPageBytes;
      if (config_.young_filter && check_young(p, ctx) != to_fast) {
        ++filtered_;
        continue;
      }
      moved += (to_fast ? tiers.promote(p) : tiers.demote(p)) ? 1 : 0;
    }
    return true;
  };
  for (const Region* r : cold) {
    if (!walk(r->start, r->end, false, free_goal_met, cold_charged_, demoted_cold_)) break;
  }
  for (const auto& [start, end] : hot_ranking_) {
    if (!walk(start, end, true, used_goal_met, hot_charged_, promoted_)) break;
  }
}

bool DamonPolicy::hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) {
  // What migrate_hot would promote: the pages of the hot regions, in
  // priority order, that pass the young filter (read without clearing).
  (void)k;  // all of them: the simulator counts them, then cuts at k
  for (const auto& [start, end] : hot_ranking_)
    for (std::uint32_t p = start; p < end; ++p)
      if (!config_.young_filter || young(p, ctx)) out.push_back(p);
  return true;
}

Counters DamonPolicy::counters() const {
  return {{"page_checks", samples_},
          {"aggregations", aggregations_},
          {"mean_regions", aggregations_ ? region_sum_ / aggregations_ : regions_.size()},
          {"promoted", promoted_},
          {"demoted_cold", demoted_cold_},
          {"quota_stops", quota_stops_},
          {"goal_stops", goal_stops_},
          {"young_filtered", filtered_}};
}

}  // namespace cxlpool::tiering::eval
