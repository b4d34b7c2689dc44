// SPDX-License-Identifier: Apache-2.0
#include "m5_policy.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include "cxlpool/tiering/mix.hpp"
#include "simulator.hpp"

namespace cxlpool::tiering::eval {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t since(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

constexpr std::uint64_t kLineBytes = 64;

}  // namespace

// The manager's view of the simulated placement. The manager cannot see
// fast-tier accesses, so the fast pages it may demote come in the kernel's
// LRU order (M5 demotes with MGLRU), least recently used first.
class M5Policy::View final : public PlacementView {
 public:
  View(const PreparedTrace& trace, const Tiers& tiers) : trace_(trace), tiers_(tiers) {}

  TierLocation locate(const PageKey& page) const override {
    if (page.space != hal::AddressSpace::kTrace || page.owner != 0) return TierLocation::kUnknown;
    const auto index = trace_.index_of(page.address);
    if (!index) return TierLocation::kUnknown;
    return tiers_.is_fast(*index) ? TierLocation::kFast : TierLocation::kSlow;
  }

  void fast_pages(std::vector<PageKey>& out, std::size_t max) const override {
    tiers_.coldest_fast(scratch_, max);
    for (auto p : scratch_) out.push_back(PageKey{hal::AddressSpace::kTrace, 0, trace_.page_address[p]});
  }

 private:
  const PreparedTrace& trace_;
  const Tiers& tiers_;
  mutable std::vector<std::uint32_t> scratch_;
};

Result<std::unique_ptr<M5Policy>> M5Policy::create(const M5PolicyConfig& config) {
  if (!(config.sampling_rate > 0.0 && config.sampling_rate <= 1.0))
    return fail(EINVAL, "sampling rate must be in (0, 1]");
  if (config.exact_first < 1 || config.exact_first > kMaxExactFirst)
    return fail(EINVAL, "exact accesses per page must be in 1.." + std::to_string(kMaxExactFirst));
  auto manager = M5Manager::create(config.manager);
  if (!manager) return tl::unexpected(manager.error());
  // Only the controller model's exact counters (PAC, and WAC for the word
  // masks) feed the manager, whose own HPT/HWT do the tracking; the model's
  // trackers are kept minimal so they cost nothing here.
  ControllerModelConfig mc;
  mc.hpt.sketch.rows = 1;
  mc.hpt.sketch.width = 16;
  mc.hpt.top_k = 1;
  mc.hwt.capacity = 1;
  auto model = ControllerModel::create(mc);
  if (!model) return tl::unexpected(model.error());
  return std::unique_ptr<M5Policy>(new M5Policy(config, std::move(*manager), std::move(*model)));
}

M5Policy::M5Policy(const M5PolicyConfig& config, M5Manager manager, ControllerModel model)
    : config_(config), manager_(std::move(manager)), model_(std::move(model)) {
  sample_all_ = config.sampling_rate >= 1.0;
  sample_threshold_ = sample_all_ ? ~0ULL : static_cast<std::uint64_t>(std::ldexp(config.sampling_rate, 64));
  rng_state_ = mix64(config.seed ^ 0x6d35ULL);
}

M5Policy::~M5Policy() = default;

std::string M5Policy::name() const {
  std::string n = config_.manager.nominator == NominatorMode::kHwt ? "m5-hwt" : "m5-hpt";
  if (!sample_all_) {
    char buf[32];
    const double inv = 1.0 / config_.sampling_rate;
    if (std::abs(inv - std::round(inv)) < 1e-9)
      std::snprintf(buf, sizeof buf, "@1/%.0f", inv);
    else
      std::snprintf(buf, sizeof buf, "@%g", config_.sampling_rate);
    n += buf;
  }
  return n;
}

void M5Policy::start(SimContext& ctx) {
  view_ = std::make_unique<View>(ctx.trace, ctx.tiers);
  epoch_ns_ = config_.epoch_ns ? config_.epoch_ns : ctx.config.epoch_ns;
  next_epoch_ns_ = ctx.trace.start_ns + epoch_ns_;
  fast_seen_.assign(ctx.trace.pages(), 0);
  tracked_epoch_.assign(ctx.trace.pages(), 0);
  exact_kept_.assign(ctx.trace.pages(), 0);
}

void M5Policy::observe(std::span<const Access> batch, SimContext& ctx) {
  // What the CXL controller sees: slow-tier accesses, each kept with
  // probability sampling_rate.
  pending_.clear();
  for (const Access& a : batch) {
    if (ctx.tiers.is_fast(a.page)) {
      ++fast_accesses_;
      if (config_.fast_accessed_bits && !fast_seen_[a.page]) {
        fast_seen_[a.page] = 1;
        fast_accessed_.push_back(PageKey{hal::AddressSpace::kTrace, 0, ctx.trace.page_address[a.page]});
      }
      continue;
    }
    ++slow_accesses_;
    ++slow_total_;
    if (!sample_all_) {
      bool exact = false;
      if (config_.sampling_unit == SamplingUnit::kPage) {
        if (tracked_epoch_[a.page] != epoch_number_ + 1) {
          tracked_epoch_[a.page] = epoch_number_ + 1;
          exact_kept_[a.page] = 0;
        }
        exact = exact_kept_[a.page] < config_.exact_first;
      }
      if (exact) {
        ++exact_kept_[a.page];
        ++first_accesses_;
      } else {
        rng_state_ += 0x9e3779b97f4a7c15ULL;
        if (mix64(rng_state_) >= sample_threshold_) continue;
      }
    }
    // Prepared accesses cover one contiguous run of words inside one page.
    const auto first = static_cast<std::uint64_t>(std::countr_zero(a.words));
    const auto words = static_cast<std::uint64_t>(std::popcount(a.words));
    pending_.push_back(TraceRecord{a.time_ns, ctx.trace.page_address[a.page] + first * kLineBytes,
                                   static_cast<std::uint32_t>(words * kLineBytes), a.is_write});
  }
  tracked_ += pending_.size();
  const auto t0 = Clock::now();
  model_.access(pending_);
  hardware_ns_ += since(t0);
  if (config_.burst_accesses != 0) burst_promote(batch, ctx);
}

void M5Policy::burst_promote(std::span<const Access> batch, SimContext& ctx) {
  for (const Access& a : batch) {
    if (config_.burst_quota != 0 && burst_this_epoch_ >= config_.burst_quota) return;
    if (ctx.tiers.is_fast(a.page)) continue;
    const std::uint64_t tracked = model_.pac(ctx.trace.page_address[a.page] >> kModelPageShift);
    std::uint64_t count = tracked;
    if (!sample_all_) {
      const std::uint64_t exact = config_.sampling_unit == SamplingUnit::kPage &&
                                          tracked_epoch_[a.page] == epoch_number_ + 1
                                      ? std::min<std::uint64_t>(exact_kept_[a.page], tracked)
                                      : 0;
      count = exact + static_cast<std::uint64_t>(static_cast<double>(tracked - exact) / config_.sampling_rate);
    }
    if (count < config_.burst_accesses) continue;
    if (ctx.tiers.free() == 0) {
      burst_scratch_.clear();
      ctx.tiers.coldest_fast(burst_scratch_, 1);
      if (burst_scratch_.empty()) return;
      const std::uint32_t victim = burst_scratch_.front();
      // last access + 1, 0 = never accessed
      if (ctx.tiers.last_access_plus_one(victim) + config_.burst_idle_ns > ctx.now_ns + 1) continue;
      if (!ctx.tiers.demote(victim)) continue;
      ++burst_demoted_;
    }
    if (ctx.tiers.promote(a.page)) {
      ++burst_promoted_;
      ++burst_this_epoch_;
    }
  }
}

void M5Policy::on_event(SimContext& ctx) {
  next_epoch_ns_ += epoch_ns_;
  auto t0 = Clock::now();
  ControllerEpoch epoch = model_.end_epoch();
  hardware_ns_ += since(t0);
  ++epoch_number_;
  burst_this_epoch_ = 0;

  list_.clear();
  list_.reserve(epoch.pages.size());
  // A sampling tracker reports its counts scaled back by the sampling rate:
  // the manager's thresholds (min accesses per epoch, the swap bar from the
  // measured bandwidth) are in accesses, and a page seen once at 1/8 stands
  // for about 8 of them. Unscaled, a page needs 2 sampled accesses (16 real
  // ones) to be nominated at all, which on memory-side traffic after a
  // cache leaves most of the true top pages unnamed.
  // Per page (kPage), the first exact_first accesses are counted exactly and
  // only the rest were sampled.
  const bool per_page = config_.sampling_unit == SamplingUnit::kPage;
  for (const PageCount& p : epoch.pages) {
    std::uint64_t exact = 0;
    if (per_page && !sample_all_) {
      const auto index = ctx.trace.index_of(p.page << kPageShift);
      if (index && tracked_epoch_[*index] == epoch_number_) exact = std::min<std::uint64_t>(exact_kept_[*index], p.count);
    }
    const auto count = sample_all_ ? p.count
                                   : exact + static_cast<std::uint64_t>(std::llround(
                                                 static_cast<double>(p.count - exact) / config_.sampling_rate));
    list_.push_back(hal::PageAccess{hal::AddressSpace::kTrace, 0, p.page << kPageShift, count, p.words, 1});
  }
  manager_.observe(list_, *view_);
  if (config_.fast_accessed_bits) {
    // The scan reads one bit per fast page (and clears it again).
    fast_scanned_ += ctx.tiers.used();
    fast_reported_ += fast_accessed_.size();
    manager_.observe_fast_accessed(fast_accessed_);
    for (const PageKey& k : fast_accessed_) fast_seen_[*ctx.trace.index_of(k.address)] = 0;
    fast_accessed_.clear();
  }

  const double seconds = static_cast<double>(epoch_ns_) / 1e9;
  EpochInput input;
  input.now_ns = ctx.now_ns;
  input.fast.capacity_pages = ctx.tiers.capacity();
  input.fast.used_pages = ctx.tiers.used();
  input.fast.measured_bandwidth_bps = static_cast<std::uint64_t>(static_cast<double>(fast_accesses_ * kLineBytes) / seconds);
  input.slow.capacity_pages = ctx.trace.pages();
  input.slow.used_pages = ctx.trace.pages() - ctx.tiers.used();
  input.slow.measured_bandwidth_bps = static_cast<std::uint64_t>(static_cast<double>(slow_accesses_ * kLineBytes) / seconds);
  fast_accesses_ = slow_accesses_ = 0;

  MigrationPlan plan = manager_.end_epoch(input, *view_);
  if (plan.promote.empty() && plan.demote.empty()) {
    manager_.confirm({}, {});
    return;
  }
  ++plans_;
  deferred_ += plan.deferred_by_rate_limit;
  // Moves the planned pages; those the tiers refuse are counted, not confirmed.
  auto apply = [&](const std::vector<PageKey>& planned, bool to_fast, std::vector<PageKey>& moved) {
    for (const PageKey& k : planned) {
      const auto index = ctx.trace.index_of(k.address);
      if (index && (to_fast ? ctx.tiers.promote(*index) : ctx.tiers.demote(*index)))
        moved.push_back(k);
      else
        ++refused_;
    }
  };
  std::vector<PageKey> promoted, demoted;
  apply(plan.demote, false, demoted);
  apply(plan.promote, true, promoted);
  // Churn: pages promoted again after this policy demoted them, and demoted
  // pages it never promoted (placed there initially).
  history_.resize(ctx.trace.pages(), 0);
  for (const PageKey& k : demoted) {
    const auto i = *ctx.trace.index_of(k.address);
    if (!(history_[i] & kWasPromoted)) ++demoted_initial_;
    history_[i] |= kWasDemoted;
  }
  for (const PageKey& k : promoted) {
    const auto i = *ctx.trace.index_of(k.address);
    if (history_[i] & kWasDemoted) ++repromoted_;
    history_[i] |= kWasPromoted;
  }
  promoted_ += promoted.size();
  demoted_ += demoted.size();
  manager_.confirm(promoted, demoted);
}

bool M5Policy::hot_pages(std::vector<std::uint32_t>& out, std::size_t k, SimContext& ctx) {
  (void)k;
  for (const Nomination& n : manager_.nominations())
    if (const auto index = ctx.trace.index_of(n.page.address)) out.push_back(*index);
  return true;
}

Counters M5Policy::counters() const {
  const ManagerStats& s = manager_.stats();
  return {{"slow_tier_accesses", slow_total_},
          {"tracked_accesses", tracked_},
          {"tracked_first_accesses", first_accesses_},
          {"epochs", s.epochs},
          {"plans", plans_},
          {"promoted", promoted_},
          {"demoted", demoted_},
          {"moves_refused", refused_},
          {"repromoted", repromoted_},
          {"demoted_initial", demoted_initial_},
          {"deferred_by_rate_limit", deferred_},
          {"rate_limit_hits", s.fast.rate_limit_hits + s.slow.rate_limit_hits},
          {"last_period_ms", s.promotion_period_ns / 1'000'000},
          {"fast_pages_scanned", fast_scanned_},
          {"fast_pages_accessed", fast_reported_},
          {"burst_promoted", burst_promoted_},
          {"burst_demoted", burst_demoted_}};
}

}  // namespace cxlpool::tiering::eval
