// SPDX-License-Identifier: Apache-2.0
// The M5 manager: pure policy that turns per-epoch access lists into
// promotions and demotions between a fast tier (DDR) and a slow tier (CXL).
//
//   Monitor    per-tier used pages and bandwidth (from the accesses it is fed,
//              or from hardware counters the caller passes in), bandwidth
//              density = bandwidth / used pages, and its trend.
//   Nominator  HPT-driven (Count-Min sketch + top-K over pages, dense/sparse
//              class from the hot-word masks) or HWT-driven (hot words first,
//              pages built from them).
//   Elector    when to promote: period T = 1 / (fscale(bw_den(slow) /
//              bw_den(fast)) * f_default), fscale(x) = x^n; promote early and
//              hard while the slow tier is denser; keep promoting while the
//              fast tier's bandwidth rises.
//   Promoter   which pages move: slow-tier candidates (nominated in recent
//              epochs, ranked by their hotness over those epochs, sparse
//              ones discounted in HPT mode) up into the room below the high
//              watermark, then swapped for fast pages clearly colder than
//              them; above the high watermark, cold pages down to the low
//              one; within a migration rate limit and a batch size.
//
// The manager never moves memory itself: it returns a MigrationPlan that the
// daemon applies with move_pages (and the evaluation harness applies to its
// simulated placement), then reports back what actually moved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"

namespace cxlpool::tiering {

// A page the manager reasons about, in the address space its source named.
struct PageKey {
  hal::AddressSpace space = hal::AddressSpace::kTrace;
  std::uint64_t owner = 0;    // region id or pid
  std::uint64_t address = 0;  // 4 KiB aligned
  bool operator==(const PageKey&) const = default;
};
struct PageKeyHash {
  std::size_t operator()(const PageKey& k) const noexcept;
};

enum class NominatorMode : std::uint8_t { kHpt = 0, kHwt = 1 };
enum class PageClass : std::uint8_t { kUnknown = 0, kDense = 1, kSparse = 2 };
enum class TierLocation : std::uint8_t { kFast, kSlow, kUnknown };

// Every field is a run-time knob with the same name in the [tiering] config
// section and in `cxlpoolctl tiering set KEY=VALUE`.
struct M5Config {
  NominatorMode nominator = NominatorMode::kHpt;  // "nominator": hpt | hwt
  // Trackers. M5's controller: 32K counters in total.
  std::uint32_t sketch_rows = 4;                  // "sketch_rows": H, 1..16
  std::uint32_t sketch_width = 8192;              // "sketch_width": W, power of two
  std::uint32_t top_k = 512;                      // "top_k": hot pages kept per epoch
  std::uint32_t hwt_capacity = 4096;              // "hwt_capacity": pages with word masks
  std::uint32_t sparse_max_words = 16;            // "sparse_max_words": sparse if <= this of 64
  bool promote_sparse = false;                    // "promote_sparse": HPT-driven ranks sparse pages like dense ones
  std::uint32_t min_accesses = 2;                 // "min_accesses": per epoch, to be nominated
  // Elector.
  double base_frequency_hz = 10.0;                // "base_frequency_hz": f_default
  double fscale_power = 4.0;                      // "fscale_power": n, 1..8 (M5: 3-6)
  std::uint64_t min_period_ns = 10'000'000;       // "min_period_ms"
  std::uint64_t max_period_ns = 10'000'000'000;   // "max_period_ms"
  // Promoter.
  double high_watermark = 0.98;                   // "high_watermark": fraction of fast capacity
  double low_watermark = 0.96;                    // "low_watermark": < high_watermark
  std::uint64_t rate_limit_bytes_per_s = 256ull << 20;  // "rate_limit_mib_s": 0 = no migration
  std::uint32_t batch_pages = 2048;               // "batch_pages": pages per move_pages batch

  // Knob access by name, values as written in the config file. set()
  // validates the single value and the combination (EINVAL naming the key
  // and the rule); on failure *this is unchanged.
  Result<void> set(std::string_view key, std::string_view value);
  Result<std::string> get(std::string_view key) const;
  static std::vector<std::string> keys();
  Result<void> validate() const;
};

// Where the caller's pages live; implemented by the daemon (its region pool
// and the moves it applied) and by the harness's simulated placement.
class PlacementView {
 public:
  virtual ~PlacementView() = default;
  virtual TierLocation locate(const PageKey& page) const = 0;
  // Pages on the fast tier the caller allows to be demoted, at most `max`.
  // The manager ranks them coldest first by what it has observed.
  virtual void fast_pages(std::vector<PageKey>& out, std::size_t max) const = 0;
};

struct TierUsage {
  std::uint64_t capacity_pages = 0;
  std::uint64_t used_pages = 0;
  // Bytes/s measured by hardware counters; 0 = estimate from the accesses.
  std::uint64_t measured_bandwidth_bps = 0;
};

struct EpochInput {
  std::uint64_t now_ns = 0;
  TierUsage fast;
  TierUsage slow;
};

struct Nomination {
  PageKey page;
  std::uint64_t count = 0;  // sketch estimate this epoch (never below the true count)
  std::uint64_t words = 0;  // hot-word mask; 0 when unknown
  PageClass page_class = PageClass::kUnknown;
  TierLocation location = TierLocation::kUnknown;
};

struct MigrationPlan {
  std::vector<PageKey> promote;  // slow -> fast, hottest first
  std::vector<PageKey> demote;   // fast -> slow, coldest first
  std::uint64_t deferred_by_rate_limit = 0;  // candidates left for a later period
};

struct TierCounters {
  std::uint64_t accesses = 0;        // last epoch
  std::uint64_t bandwidth_bps = 0;   // last epoch (measured or estimated)
  std::uint64_t hot_pages = 0;       // last epoch's nominations located on this tier
  std::uint64_t promotions = 0;      // pages moved onto this tier (confirmed)
  std::uint64_t demotions = 0;       // pages moved off this tier (confirmed)
  std::uint64_t rate_limit_hits = 0;    // promotion periods in which the rate limit cut moves onto this tier
  std::uint64_t used_pages = 0;         // as the caller reported at the last epoch
  double bandwidth_density = 0;         // bandwidth_bps / used pages, last epoch
};

struct ManagerStats {
  std::uint64_t epochs = 0;
  std::uint64_t last_epoch_accesses = 0;
  std::uint64_t promotion_period_ns = 0;  // the Elector's current T
  std::uint64_t plans = 0;                // promotion periods that produced a plan
  TierCounters fast;
  TierCounters slow;
  std::uint64_t bytes_migrated = 0;       // confirmed moves, both directions
  double density_ratio = 0;               // bw_den(slow) / bw_den(fast) last epoch (inf: fast idle)
  bool fast_bandwidth_rising = false;     // the Monitor's trend (guideline 2)
  std::uint64_t rate_budget_bytes = 0;    // migration budget left in the token bucket
};

// Driving it, per epoch (the caller picks the epoch length; the Elector
// decides which epochs are promotion periods):
//   1. observe() every batch of accesses the sources collected;
//   2. plan = end_epoch({now_ns, fast usage, slow usage}, placement);
//   3. apply plan.promote / plan.demote (move_pages, or a simulated move);
//   4. confirm(what moved) -- even when nothing moved, so the migration
//      budget charged for the plan is refunded.
// Not thread-safe: one caller drives it (the daemon's tiering service).
//
// A PageAccess run (pages > 1, e.g. a DAMON region) is expanded into at most
// kMaxRunPages pages per epoch, each with the run's count; when the run is
// longer, the window rotates with the epoch number so the whole region is
// covered over successive epochs. The Monitor still counts count x pages
// accesses for the run.
class M5Manager {
 public:
  static constexpr std::uint64_t kMaxRunPages = 256;

  static Result<M5Manager> create(const M5Config& config);
  M5Manager(M5Manager&&) noexcept;
  M5Manager& operator=(M5Manager&&) noexcept;
  ~M5Manager();

  // Feeds one batch of accesses of the current epoch. The placement view
  // attributes them to tiers for the Monitor.
  void observe(std::span<const hal::PageAccess> accesses, const PlacementView& placement);

  // Fast-tier pages found accessed during the current epoch by the caller's
  // scan of the fast tier (accessed bits: idle page tracking, as M5's own
  // MGLRU-based demotion reads them); every fast page not listed counts as
  // idle for this epoch. Once called, the manager trusts this signal: swap
  // victims are the fast pages active in the fewest recent epochs, and a
  // swap needs its candidate active in clearly more recent epochs than its
  // victim (manager/promoter.hpp). Callers that cannot scan never call it
  // and keep the LRU-ordered victims. Call it before end_epoch().
  void observe_fast_accessed(std::span<const PageKey> accessed);

  // Ends the epoch: the trackers are queried and reset (as M5's controller
  // is on every host query). Returns a plan when the Elector says this is a
  // promotion period, an empty plan otherwise.
  MigrationPlan end_epoch(const EpochInput& input, const PlacementView& placement);

  // What the caller managed to move of the last plan (busy or absent pages
  // fail); only confirmed moves count and only they charge the rate limit:
  // the plan is charged when made and confirm() refunds what did not move
  // (a plan never confirmed stays charged). Call it once per plan.
  void confirm(std::span<const PageKey> promoted, std::span<const PageKey> demoted);

  // The last completed epoch's nominations, hottest first.
  const std::vector<Nomination>& nominations() const;

  const ManagerStats& stats() const;
  const M5Config& config() const;
  // Applies a knob at run time; trackers are rebuilt at the next epoch when
  // their geometry changed. Returns the previous value.
  Result<std::string> set_knob(std::string_view key, std::string_view value);

 private:
  struct State;
  explicit M5Manager(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cxlpool::tiering
