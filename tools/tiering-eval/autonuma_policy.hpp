// SPDX-License-Identifier: Apache-2.0
// AutoNUMA-like model: NUMA balancing in memory tiering mode
// (kernel.numa_balancing = 2), as the kernel samples.
//
//   Scanner   every scan period the task's NUMA work marks (PROT_NONE) the
//             next numa_balancing_scan_size_mb of its address space, in 2 MiB
//             steps, only slow-tier pages (tiering mode skips top-tier nodes);
//             a step that marked nothing costs only the 8x virtual budget.
//             The scan time is stored with the page.
//   Hint fault  the next access to a marked page faults and unmarks it;
//             latency = fault time - scan time.
//   Promotion a slow-tier page is promoted when the fast node has plenty
//             free memory (above promo watermark + max(1 GiB, node/16)), or
//             when latency < the hot threshold (numa_balancing_hot_threshold_ms,
//             adjusted every scan_period_max to hold the candidate rate near
//             numa_balancing_promote_rate_limit_MBps) and the per-second
//             candidate rate is under that limit. The migration itself needs
//             free pages above the high watermark; otherwise kswapd is woken
//             and this promotion fails.
//   Demotion  kswapd (demotion enabled) demotes the least recently used fast
//             pages in 32-page batches until free pages reach the promo watermark.
//
// One sample per page per scan: a page touched once shortly after its scan
// looks exactly as hot as one touched a million times.
#pragma once

#include "policy.hpp"

namespace cxlpool::tiering::eval {

struct AutoNumaConfig {
  std::uint64_t scan_delay_ns = 1'000'000'000;       // numa_balancing_scan_delay_ms 1000
  std::uint64_t scan_period_ns = 1'000'000'000;      // numa_balancing_scan_period_min_ms 1000 (stays: see docs)
  std::uint64_t scan_period_max_ns = 60'000'000'000;  // numa_balancing_scan_period_max_ms 60000 (threshold window)
  std::uint64_t scan_size_mb = 256;                  // numa_balancing_scan_size_mb
  std::uint64_t hot_threshold_ns = 1'000'000'000;    // numa_balancing_hot_threshold_ms 1000
  std::uint64_t promote_rate_limit_mbps = 65536;     // numa_balancing_promote_rate_limit_MBps
  std::uint32_t watermark_scale_factor = 10;         // vm.watermark_scale_factor (1/10000 of the node)
  double min_free_fraction = 0.001;                  // min watermark as a fraction of the fast node
  std::uint64_t enough_free_floor_bytes = 1ULL << 30;  // pgdat_free_space_enough(): max(1 GiB, node/16)
  std::uint32_t kswapd_batch = 32;                   // SWAP_CLUSTER_MAX
};

class AutoNumaPolicy final : public Policy {
 public:
  explicit AutoNumaPolicy(const AutoNumaConfig& config = {}) : config_(config) {}
  std::string name() const override { return "autonuma"; }
  void start(SimContext& ctx) override;
  void observe(std::span<const Access> batch, SimContext& ctx) override;
  std::uint64_t next_event_ns() const override { return next_scan_ns_; }
  void on_event(SimContext& ctx) override;
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) override;
  Counters counters() const override;

  // Watermarks of the fast node, in pages (exposed for tests).
  std::uint64_t high_wmark() const { return high_; }
  std::uint64_t promo_wmark() const { return promo_; }
  std::uint64_t threshold_ns() const { return threshold_ns_; }

 private:
  void scan(SimContext& ctx);
  void hint_fault(std::uint32_t page, std::uint64_t now, SimContext& ctx);
  bool rate_limited(std::uint64_t now);
  void adjust_threshold(std::uint64_t now);

  AutoNumaConfig config_;
  std::vector<std::uint8_t> marked_;
  std::vector<std::uint64_t> scan_time_;
  std::size_t scan_offset_ = 0;
  std::uint64_t next_scan_ns_ = kNever;
  std::uint64_t threshold_ns_ = 0;
  std::uint64_t rate_limit_pages_ = 0;  // per second
  std::uint64_t enough_free_ = 0;
  std::uint64_t high_ = 0, promo_ = 0;
  // numa_promotion_rate_limit(): 1-second window of candidate counts.
  std::uint64_t rl_window_start_ = 0, rl_window_cand_ = 0;
  // numa_promotion_adjust_threshold(): scan_period_max window.
  std::uint64_t th_window_start_ = 0, th_window_cand_ = 0;
  std::uint64_t candidates_total_ = 0;
  struct Candidate {
    std::uint64_t latency_ns;
    std::uint32_t page;
  };
  std::vector<Candidate> epoch_candidates_;
  std::uint64_t scans_ = 0, pages_marked_ = 0, hint_faults_ = 0, slow_faults_ = 0, promoted_ = 0,
                promote_failed_ = 0, rate_limited_ = 0, kswapd_wakeups_ = 0, kswapd_demoted_ = 0;
};

}  // namespace cxlpool::tiering::eval
