// SPDX-License-Identifier: Apache-2.0
// M5-HPT / M5-HWT: the real M5Manager, fed per epoch with what the CXL
// controller's trackers see. M5 tracks CXL memory traffic only, so only
// accesses to slow-tier pages reach the controller model (exact per-page and
// per-word counters, cxlpool/tiering/controller_model.hpp); each reaches it
// with probability sampling_rate (1 = every access, 1/N = a lossy tracker;
// SamplingUnit says whether a page's first access in a query period is
// always kept).
// At each epoch end the controller's per-page counts and word masks become
// the manager's PageAccess list; its MigrationPlan is applied to the
// simulated placement and what moved is confirmed. Fast-tier and slow-tier
// bandwidth come in as measured counters (a host's memory-controller
// counters), since the trackers cannot see DDR traffic. Fast-tier pages'
// hotness comes from the host's accessed-bit scan (fast_accessed_bits).
#pragma once

#include <memory>

#include "cxlpool/tiering/controller_model.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "policy.hpp"

namespace cxlpool::tiering::eval {

// How a tracker with a sampling rate r < 1 picks the accesses it counts.
//   kRecord: every access independently with probability r; a page's count is
//            its sampled count / r. A page touched a few times in a query
//            period is often not seen at all in it.
//   kPage:   the first `exact_first` accesses to each page in a query period
//            always (a small per-page counter, cleared at each query, filters
//            them: 1 bit for the first access, 2 bits for up to 3), every
//            later one with probability r; a page's count is its exact
//            accesses + its later sampled accesses / r. Every touched page is
//            named, and a page touched up to exact_first times has its exact
//            count; only the counts of repeated accesses beyond are sampled.
//            The tracker handles (the exact ones) + r x (the rest) accesses
//            instead of r x all.
enum class SamplingUnit : std::uint8_t { kRecord, kPage };

inline constexpr std::uint32_t kMaxExactFirst = 255;

struct M5PolicyConfig {
  M5Config manager;                 // the daemon's [tiering] defaults
  double sampling_rate = 1.0;       // (0, 1]
  SamplingUnit sampling_unit = SamplingUnit::kPage;
  // kPage: how many of a page's accesses per query period are always kept,
  // 1..kMaxExactFirst. 3 (a 2-bit counter per page): on memory-side traffic
  // most pages are touched a few times per period, and the true top-K is
  // every page touched twice or more plus some touched once; with only the
  // first access exact, a page touched twice usually reads as once.
  std::uint32_t exact_first = 3;
  std::uint64_t epoch_ns = 0;       // controller query period; 0 = the measurement epoch
  std::uint64_t seed = 1;
  // The host scans the fast tier's accessed bits once per epoch (idle page
  // tracking: read /sys/kernel/mm/page_idle/bitmap for the fast pages'
  // frames, then mark them idle again) and reports the accessed pages to the
  // manager. Modelled exactly: a fast page touched in the epoch is reported,
  // none other.
  bool fast_accessed_bits = true;
  // Burst promotion (an experiment, off by default): a slow page whose
  // (scaled) count in the current query period reaches burst_accesses is
  // promoted at once, from the next batch on -- as if the controller raised
  // an interrupt on a heavy hitter instead of waiting for the query --
  // swapping out the least recently used fast page when the tier is full,
  // only if that page has been idle for burst_idle_ns. At most burst_quota
  // such promotions per query period (0: no limit). These moves bypass the
  // manager's plan and rate limit; they model how much reacting inside a
  // query period could gain, and at what migration volume.
  std::uint64_t burst_accesses = 0;
  std::uint64_t burst_quota = 0;
  std::uint64_t burst_idle_ns = 0;
};

class M5Policy final : public Policy {
 public:
  // EINVAL: bad manager config, sampling rate outside (0, 1] or exact_first
  // outside 1..kMaxExactFirst.
  static Result<std::unique_ptr<M5Policy>> create(const M5PolicyConfig& config);
  ~M5Policy() override;

  std::string name() const override;
  void start(SimContext& ctx) override;
  void observe(std::span<const Access> batch, SimContext& ctx) override;
  std::uint64_t next_event_ns() const override { return next_epoch_ns_; }
  void on_event(SimContext& ctx) override;
  bool hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) override;
  Counters counters() const override;
  std::uint64_t hardware_ns() const override { return hardware_ns_; }

  const M5Manager& manager() const { return manager_; }

 private:
  class View;
  M5Policy(const M5PolicyConfig& config, M5Manager manager, ControllerModel model);
  void burst_promote(std::span<const Access> batch, SimContext& ctx);

  M5PolicyConfig config_;
  M5Manager manager_;
  ControllerModel model_;
  std::unique_ptr<View> view_;
  std::uint64_t sample_threshold_ = 0;  // an access is tracked when rng < threshold
  bool sample_all_ = true;
  std::uint64_t rng_state_ = 0;
  std::uint64_t epoch_ns_ = 0;
  std::uint64_t next_epoch_ns_ = kNever;
  std::uint64_t fast_accesses_ = 0, slow_accesses_ = 0;  // this epoch
  std::vector<TraceRecord> pending_;
  std::vector<std::uint8_t> fast_seen_;  // per page: touched on the fast tier this epoch
  std::vector<std::uint32_t> tracked_epoch_;  // per page: 1 + the epoch exact_kept_ counts in (kPage)
  std::vector<std::uint8_t> exact_kept_;      // per page: accesses kept exactly in that epoch (kPage)
  std::uint32_t epoch_number_ = 0;
  std::uint64_t burst_this_epoch_ = 0, burst_promoted_ = 0, burst_demoted_ = 0;
  std::vector<std::uint32_t> burst_scratch_;
  std::uint64_t first_accesses_ = 0;  // tracked because they were among a page's first in the epoch (kPage)
  std::vector<PageKey> fast_accessed_;
  std::uint64_t fast_scanned_ = 0, fast_reported_ = 0;
  std::vector<hal::PageAccess> list_;
  std::uint64_t hardware_ns_ = 0;
  std::uint64_t tracked_ = 0, slow_total_ = 0, plans_ = 0, promoted_ = 0, demoted_ = 0, refused_ = 0,
                deferred_ = 0, repromoted_ = 0, demoted_initial_ = 0;
  static constexpr std::uint8_t kWasPromoted = 1, kWasDemoted = 2;
  std::vector<std::uint8_t> history_;  // per page: kWasPromoted | kWasDemoted
};

}  // namespace cxlpool::tiering::eval
