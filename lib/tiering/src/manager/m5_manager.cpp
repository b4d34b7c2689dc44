// SPDX-License-Identifier: Apache-2.0
// M5Manager: ties Monitor, Nominator, Elector and Promoter together.
#include "cxlpool/tiering/m5_manager.hpp"

#include <algorithm>
#include <limits>
#include <unordered_set>
#include <utility>

#include "cxlpool/tiering/manager/candidate_pool.hpp"
#include "cxlpool/tiering/manager/elector.hpp"
#include "cxlpool/tiering/manager/hotness_table.hpp"
#include "cxlpool/tiering/manager/monitor.hpp"
#include "cxlpool/tiering/manager/nominator.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"
#include "cxlpool/tiering/manager/promoter.hpp"
#include "cxlpool/tiering/manager/swap_judge.hpp"
#include "cxlpool/tiering/manager/token_bucket.hpp"

namespace cxlpool::tiering {

namespace m = manager;

namespace {

std::uint64_t saturating_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

// Geometry and thresholds the nominator was built with.
bool nominator_changed(const M5Config& a, const M5Config& b) {
  return a.nominator != b.nominator || a.sketch_rows != b.sketch_rows || a.sketch_width != b.sketch_width ||
         a.top_k != b.top_k || a.hwt_capacity != b.hwt_capacity || a.sparse_max_words != b.sparse_max_words ||
         a.min_accesses != b.min_accesses;
}

// Candidates remembered across epochs: enough for several epochs' top-K and
// for the largest batch guideline 1 allows.
std::size_t pool_entries(const M5Config& c) {
  return std::max<std::size_t>(16 * std::size_t{c.top_k}, 4 * std::size_t{c.batch_pages} * m::kHardBatchFactor);
}

void fill_tier(TierCounters& out, const m::TierSample& s) {
  out.accesses = s.accesses;
  out.bandwidth_bps = static_cast<std::uint64_t>(s.bandwidth_bps);
  out.used_pages = s.used_pages;
  out.bandwidth_density = s.density;
}

}  // namespace

struct M5Manager::State {
  State(const M5Config& c, std::unique_ptr<m::Nominator> n)
      : config(c), nominator(std::move(n)), bucket(c.rate_limit_bytes_per_s), pool(pool_entries(c)) {}

  M5Config config;
  std::unique_ptr<m::Nominator> nominator;
  bool rebuild_nominator = false;
  m::Monitor monitor;
  m::Elector elector;
  m::HotnessTable hotness;
  m::TokenBucket bucket;
  m::CandidatePool pool;
  m::SwapJudge swap_judge;
  std::vector<Nomination> nominations;
  std::vector<Nomination> candidates;  // scratch: pool + this epoch's nominations
  ManagerStats stats;
  std::uint32_t epoch = 0;         // the open epoch, for hotness ages and run windows
  std::uint64_t charged_pages = 0;  // of the last plan, until confirm()
};

Result<M5Manager> M5Manager::create(const M5Config& config) {
  if (auto ok = config.validate(); !ok) return tl::unexpected(ok.error());
  auto nominator = m::make_nominator(config);
  if (!nominator) return tl::unexpected(nominator.error());
  return M5Manager(std::make_unique<State>(config, std::move(*nominator)));
}

M5Manager::M5Manager(std::unique_ptr<State> state) : state_(std::move(state)) {}
M5Manager::M5Manager(M5Manager&&) noexcept = default;
M5Manager& M5Manager::operator=(M5Manager&&) noexcept = default;
M5Manager::~M5Manager() = default;

void M5Manager::observe(std::span<const hal::PageAccess> accesses, const PlacementView& placement) {
  State& s = *state_;
  for (const hal::PageAccess& a : accesses) {
    if (a.count == 0) continue;
    const PageKey first = m::page_of(a);
    if (a.pages <= 1) {
      const std::uint64_t id = m::page_id(first);
      s.monitor.add(placement.locate(first), a.count);
      s.nominator->record(first, id, a.count, a.words);
      s.hotness.add(id, a.count, s.epoch);
      continue;
    }
    const std::uint64_t n = std::min(a.pages, kMaxRunPages);
    const std::uint64_t start = a.pages > n ? (std::uint64_t{s.epoch} * n) % a.pages : 0;
    // Each expanded page stands for pages / n pages of the run in the
    // Monitor's totals; the remainder goes to the first ones.
    const std::uint64_t per = saturating_mul(a.count, a.pages / n);
    const std::uint64_t extra = a.pages % n;
    for (std::uint64_t i = 0; i < n; ++i) {
      const PageKey key = m::page_in_run(first, (start + i) % a.pages);
      const std::uint64_t id = m::page_id(key);
      s.monitor.add(placement.locate(key), i < extra ? per + a.count : per);
      s.nominator->record(key, id, a.count, a.words);
      s.hotness.add(id, a.count, s.epoch);
    }
  }
}

MigrationPlan M5Manager::end_epoch(const EpochInput& input, const PlacementView& placement) {
  State& s = *state_;
  ManagerStats& st = s.stats;
  const std::uint64_t accesses = s.monitor.accesses();

  std::vector<Nomination> nominations = s.nominator->end_epoch();
  if (s.rebuild_nominator) {
    // The config was validated when the knob was set; should building still
    // fail (out of memory), the old nominator keeps running.
    if (auto rebuilt = m::make_nominator(s.config)) s.nominator = std::move(*rebuilt);
    s.rebuild_nominator = false;
  }
  st.fast.hot_pages = st.slow.hot_pages = 0;
  for (Nomination& n : nominations) {
    n.location = placement.locate(n.page);
    if (n.location == TierLocation::kFast) ++st.fast.hot_pages;
    if (n.location == TierLocation::kSlow) ++st.slow.hot_pages;
  }

  const auto nominal_ns = static_cast<std::uint64_t>(1e9 / s.config.base_frequency_hz);
  const m::MonitorEpoch& mon = s.monitor.end_epoch(input, nominal_ns);

  // Candidates over the recent epochs, ranked by their hotness so far.
  s.pool.add(nominations, s.epoch);
  const std::vector<Nomination>& ranked =
      s.pool.refresh(placement, s.hotness, s.epoch, s.config.min_accesses, s.config.sparse_max_words);
  // The score an average fast page would have: its accesses per epoch (from
  // the fast tier's bandwidth density) times the hotness window's gain.
  const double fast_page_score = mon.fast.density * static_cast<double>(mon.duration_ns) / 1e9 /
                                 static_cast<double>(m::kAccessBytes) * m::HotnessTable::steady_gain();
  const double hot_bar = std::max(fast_page_score * s.swap_judge.factor(), static_cast<double>(s.config.min_accesses));
  const double total_bps = mon.fast.bandwidth_bps + mon.slow.bandwidth_bps;
  if (total_bps > 0) s.swap_judge.epoch(mon.fast.bandwidth_bps / total_bps);
  bool hot_candidates = false;
  for (const Nomination& n : ranked) {
    const double benefit = m::promotion_benefit(n, static_cast<double>(n.count), s.config);
    if (benefit > hot_bar) {
      hot_candidates = true;
      break;
    }
    if (static_cast<double>(n.count) <= hot_bar) break;  // ranked by score: the rest are colder
  }

  const m::Election election =
      s.elector.decide(input.now_ns, mon.density_ratio, mon.fast_rising, s.config, hot_candidates);
  s.bucket.refill(input.now_ns);

  MigrationPlan plan;
  if (election.promote) {
    s.candidates.assign(ranked.begin(), ranked.end());
    // This epoch's other nominations only keep their pages off the demotion
    // list; slow-tier ones become candidates through the pool.
    for (const Nomination& n : nominations) {
      if (n.location != TierLocation::kSlow) s.candidates.push_back(n);
    }
    m::PromoterResult r = m::plan_migrations({s.candidates, input.fast, election.batch_pages, s.epoch, hot_bar},
                                             s.config, placement, s.hotness, s.bucket);
    // Only the Elector's own promotion periods restart the period and the
    // trend; an epoch promoting hot candidates alone leaves both running.
    if (!election.hot_candidates) {
      s.elector.promoted(input.now_ns);
      s.monitor.mark_promotion_period();
    }
    if (r.promotions_deferred) ++st.fast.rate_limit_hits;
    if (r.demotions_deferred) ++st.slow.rate_limit_hits;
    plan = std::move(r.plan);
    if (!plan.promote.empty() || !plan.demote.empty()) ++st.plans;
    if (plan.demote.size() > r.pressure_demotions) s.swap_judge.swapped();
  }
  s.charged_pages = plan.promote.size() + plan.demote.size();

  ++st.epochs;
  st.last_epoch_accesses = accesses;
  st.promotion_period_ns = election.period_ns;
  fill_tier(st.fast, mon.fast);
  fill_tier(st.slow, mon.slow);
  st.density_ratio = mon.density_ratio;
  st.fast_bandwidth_rising = mon.fast_rising;
  st.rate_budget_bytes = s.bucket.tokens();
  // A lossy (sampled) tracker misses in any one epoch many of the pages it
  // names in most epochs; the candidate pool remembers the slow-tier ones.
  // Up to top_k, the list names them after this epoch's own nominations,
  // hottest first, with count 0 (not seen this epoch). They only add to what
  // the manager reports as hot: the plan above used the pool already.
  if (nominations.size() < s.config.top_k && !ranked.empty()) {
    std::unordered_set<std::uint64_t> named;
    named.reserve(nominations.size());
    for (const Nomination& n : nominations) named.insert(m::page_id(n.page));
    for (const Nomination& n : ranked) {
      if (nominations.size() >= s.config.top_k) break;
      if (named.count(m::page_id(n.page)) != 0) continue;
      Nomination remembered = n;
      remembered.count = 0;
      nominations.push_back(remembered);
      ++st.slow.hot_pages;
    }
  }
  s.nominations = std::move(nominations);
  ++s.epoch;
  return plan;
}

void M5Manager::confirm(std::span<const PageKey> promoted, std::span<const PageKey> demoted) {
  State& s = *state_;
  ManagerStats& st = s.stats;
  st.fast.promotions += promoted.size();
  st.slow.demotions += promoted.size();
  st.fast.demotions += demoted.size();
  st.slow.promotions += demoted.size();
  const std::uint64_t moved = promoted.size() + demoted.size();
  st.bytes_migrated += moved * m::kPageBytes;
  if (s.charged_pages > moved) s.bucket.refund((s.charged_pages - moved) * m::kPageBytes);
  s.charged_pages = 0;
  st.rate_budget_bytes = s.bucket.tokens();
  // A promoted page keeps the score that got it nominated; a demoted one
  // starts over, so it must earn its way back instead of bouncing.
  for (const PageKey& p : demoted) s.hotness.forget(m::page_id(p));
  for (const PageKey& p : promoted) s.pool.forget(m::page_id(p));
}

const std::vector<Nomination>& M5Manager::nominations() const { return state_->nominations; }
const ManagerStats& M5Manager::stats() const { return state_->stats; }
const M5Config& M5Manager::config() const { return state_->config; }

Result<std::string> M5Manager::set_knob(std::string_view key, std::string_view value) {
  State& s = *state_;
  auto previous = s.config.get(key);
  if (!previous) return previous;
  M5Config next = s.config;
  if (auto ok = next.set(key, value); !ok) return tl::unexpected(ok.error());
  if (nominator_changed(s.config, next)) s.rebuild_nominator = true;
  if (next.rate_limit_bytes_per_s != s.config.rate_limit_bytes_per_s) s.bucket.set_rate(next.rate_limit_bytes_per_s);
  s.pool.set_max_entries(pool_entries(next));
  s.config = next;
  return previous;
}

}  // namespace cxlpool::tiering
