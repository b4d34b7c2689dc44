// SPDX-License-Identifier: Apache-2.0
#include "autonuma_policy.hpp"

#include <algorithm>

#include "simulator.hpp"

namespace cxlpool::tiering::eval {

namespace {
constexpr std::uint64_t kSecondNs = 1'000'000'000;
constexpr std::uint64_t kHugePages = 512;   // HPAGE_SIZE / PAGE_SIZE: scan ranges end 2 MiB aligned
constexpr std::uint64_t kAdjustSteps = 16;  // NUMA_MIGRATION_ADJUST_STEPS
}  // namespace

void AutoNumaPolicy::start(SimContext& ctx) {
  const std::size_t pages = ctx.trace.pages();
  marked_.assign(pages, 0);
  scan_time_.assign(pages, 0);
  next_scan_ns_ = ctx.trace.start_ns + config_.scan_delay_ns;
  threshold_ns_ = config_.hot_threshold_ns;
  rate_limit_pages_ = config_.promote_rate_limit_mbps << (20 - kPageShift);
  const std::uint64_t cap = ctx.tiers.capacity();
  const Watermarks w = kernel_watermarks(cap, config_.min_free_fraction, config_.watermark_scale_factor);
  high_ = w.high;
  promo_ = w.promo;
  enough_free_ = promo_ + std::max<std::uint64_t>(config_.enough_free_floor_bytes >> kPageShift, cap / 16);
  rl_window_start_ = th_window_start_ = ctx.trace.start_ns;
}

void AutoNumaPolicy::on_event(SimContext& ctx) {
  scan(ctx);
  next_scan_ns_ += config_.scan_period_ns;
}

// task_numa_work(): one range of the remaining budget at a time; a range
// that changed no PTE is charged to the virtual budget (8x) only. At the end
// of the address space the scan restarts from 0 at the next period.
void AutoNumaPolicy::scan(SimContext& ctx) {
  ++scans_;
  const std::size_t n = marked_.size();
  const std::int64_t budget_pages = static_cast<std::int64_t>(config_.scan_size_mb << (20 - kPageShift));
  std::int64_t pages = budget_pages;
  std::int64_t virt = budget_pages * 8;
  while (pages > 0 && virt > 0) {
    if (scan_offset_ >= n) {
      scan_offset_ = 0;
      break;
    }
    std::uint64_t end = (scan_offset_ + static_cast<std::uint64_t>(pages) + kHugePages - 1) / kHugePages * kHugePages;
    end = std::min<std::uint64_t>(end, n);
    std::uint64_t updates = 0;
    for (std::uint64_t p = scan_offset_; p < end; ++p) {
      // Memory tiering mode without NUMA_BALANCING_NORMAL skips top-tier pages.
      if (marked_[p] || ctx.tiers.is_fast(static_cast<std::uint32_t>(p))) continue;
      marked_[p] = 1;
      scan_time_[p] = ctx.now_ns;
      ++updates;
    }
    pages_marked_ += updates;
    const auto range = static_cast<std::int64_t>(end - scan_offset_);
    if (updates) pages -= range;
    virt -= range;
    scan_offset_ = end;
  }
}

void AutoNumaPolicy::observe(std::span<const Access> batch, SimContext& ctx) {
  for (const Access& a : batch)
    if (marked_[a.page]) hint_fault(a.page, a.time_ns, ctx);
}

// numa_promotion_rate_limit(): candidates counted per 1-second window.
bool AutoNumaPolicy::rate_limited(std::uint64_t now) {
  ++candidates_total_;
  if (now - rl_window_start_ > kSecondNs) {
    rl_window_start_ = now;
    rl_window_cand_ = candidates_total_;
  }
  return candidates_total_ - rl_window_cand_ >= rate_limit_pages_;
}

// numa_promotion_adjust_threshold(): every scan_period_max, move the
// threshold one step (2/16 of the default) towards the rate limit.
void AutoNumaPolicy::adjust_threshold(std::uint64_t now) {
  if (now - th_window_start_ <= config_.scan_period_max_ns) return;
  th_window_start_ = now;
  const std::uint64_t ref_cand = rate_limit_pages_ * (config_.scan_period_max_ns / 1'000'000) / 1000;
  const std::uint64_t diff = candidates_total_ - th_window_cand_;
  const std::uint64_t ref_th = config_.hot_threshold_ns;
  const std::uint64_t unit = ref_th * 2 / kAdjustSteps;
  std::uint64_t th = threshold_ns_ ? threshold_ns_ : ref_th;
  if (diff > ref_cand * 11 / 10)
    th = std::max(th > unit ? th - unit : 0, unit);
  else if (diff < ref_cand * 9 / 10)
    th = std::min(th + unit, ref_th * 2);
  th_window_cand_ = candidates_total_;
  threshold_ns_ = th;
}

void AutoNumaPolicy::hint_fault(std::uint32_t page, std::uint64_t now, SimContext& ctx) {
  ++hint_faults_;
  marked_[page] = 0;
  if (ctx.tiers.is_fast(page)) return;
  ++slow_faults_;
  const std::uint64_t latency = now - scan_time_[page];
  if (ctx.tiers.free() > enough_free_) {
    // pgdat_free_space_enough(): promote whatever faults, reset the threshold.
    threshold_ns_ = config_.hot_threshold_ns;
  } else {
    adjust_threshold(now);
    if (latency >= threshold_ns_) return;
    if (rate_limited(now)) {
      ++rate_limited_;
      return;
    }
  }
  epoch_candidates_.push_back({latency, page});
  // migrate_balanced_pgdat(): the migration needs free pages above the high
  // watermark; otherwise kswapd is woken (it demotes down to the promo
  // watermark) and this promotion fails.
  if (ctx.tiers.free() > high_ + 1) {
    if (ctx.tiers.promote(page))
      ++promoted_;
    else
      ++promote_failed_;
    return;
  }
  ++promote_failed_;
  ++kswapd_wakeups_;
  kswapd_demoted_ += ctx.tiers.reclaim_to(promo_ + 1, config_.kswapd_batch);
}

bool AutoNumaPolicy::hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext&) {
  // Its own ranking: the shorter the hint-fault latency, the hotter.
  std::stable_sort(epoch_candidates_.begin(), epoch_candidates_.end(),
                   [](const Candidate& a, const Candidate& b) { return a.latency_ns < b.latency_ns; });
  (void)k;  // all of them: the simulator counts the picks, then cuts at k
  for (const Candidate& c : epoch_candidates_) out.push_back(c.page);
  epoch_candidates_.clear();
  return true;
}

Counters AutoNumaPolicy::counters() const {
  return {{"scans", scans_},
          {"pages_marked", pages_marked_},
          {"hint_faults", hint_faults_},
          {"slow_tier_faults", slow_faults_},
          {"promotion_candidates", candidates_total_},
          {"promoted", promoted_},
          {"promote_failed", promote_failed_},
          {"rate_limited", rate_limited_},
          {"kswapd_wakeups", kswapd_wakeups_},
          {"kswapd_demoted", kswapd_demoted_}};
}

}  // namespace cxlpool::tiering::eval
