// SPDX-License-Identifier: Apache-2.0
#include "simulator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>

namespace cxlpool::tiering::eval {

namespace {

using Clock = std::chrono::steady_clock;

std::uint64_t elapsed_ns(Clock::time_point t0) {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

}  // namespace

std::uint64_t top_k_sum(const std::vector<std::uint32_t>& counts, const std::vector<std::uint32_t>& pages,
                        std::size_t k) {
  std::vector<std::uint32_t> c;
  c.reserve(pages.size());
  for (auto p : pages) c.push_back(counts[p]);
  k = std::min(k, c.size());
  if (k < c.size()) std::nth_element(c.begin(), c.begin() + k, c.end(), std::greater<>());
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < k; ++i) sum += c[i];
  return sum;
}

SimResult simulate(const PreparedTrace& trace, Policy& policy, const SimConfig& config) {
  const auto wall0 = Clock::now();
  const std::size_t pages = trace.pages();
  const auto capacity = static_cast<std::uint64_t>(std::floor(config.fast_fraction * static_cast<double>(pages)));
  Tiers tiers(pages, capacity);
  if (!config.detection && config.placement == InitialPlacement::kFirstTouch) {
    for (const Access& a : trace.accesses) {
      if (tiers.used() >= tiers.capacity()) break;
      tiers.place_fast(a.page);
    }
  }
  tiers.set_frozen(config.detection);

  SimResult r;
  r.policy = policy.name();
  SimContext ctx{tiers, trace, config, trace.start_ns};

  const std::uint32_t nbuckets = std::max<std::uint32_t>(config.buckets, 1);
  r.bucket_ns = std::max<std::uint64_t>((trace.duration_ns() + nbuckets - 1) / nbuckets, 1);
  std::vector<std::uint64_t> bucket_all(nbuckets, 0), bucket_fast(nbuckets, 0);
  const std::uint64_t late_from_ns = trace.start_ns + trace.duration_ns() / 2;

  const std::uint64_t epoch_ns = std::max<std::uint64_t>(config.epoch_ns, 1);
  std::uint64_t epoch_end = trace.start_ns + epoch_ns;
  std::vector<std::uint32_t> epoch_counts(pages, 0);
  std::vector<std::uint32_t> epoch_pages;
  std::vector<std::uint32_t> picks;
  std::vector<std::uint32_t> pick_stamp(pages, 0);
  std::uint32_t stamp = 0;
  double ratio_sum = 0;
  std::uint64_t picks_total = 0;
  bool has_ratio = false;

  auto close_epoch = [&] {
    if (epoch_pages.empty()) return;
    picks.clear();
    ctx.epoch_counts = &epoch_counts;
    ctx.epoch_pages = &epoch_pages;
    const bool has = policy.hot_pages(picks, config.ratio_k, ctx);
    ctx.epoch_counts = nullptr;
    ctx.epoch_pages = nullptr;
    if (has) {
      has_ratio = true;
      ++stamp;
      std::uint64_t picked = 0;
      std::size_t taken = 0;
      for (auto p : picks) {
        if (p >= pages || pick_stamp[p] == stamp) continue;
        pick_stamp[p] = stamp;
        if (taken < config.ratio_k) picked += epoch_counts[p];
        ++taken;
      }
      const std::uint64_t best = top_k_sum(epoch_counts, epoch_pages, config.ratio_k);
      const double ratio = best ? static_cast<double>(picked) / static_cast<double>(best) : 0.0;
      r.ratio_series.push_back(ratio);
      ratio_sum += ratio;
      picks_total += taken;
      ++r.ratio_epochs;
    }
    for (auto p : epoch_pages) epoch_counts[p] = 0;
    epoch_pages.clear();
  };

  {
    const auto t0 = Clock::now();
    policy.start(ctx);
    r.policy_ns += elapsed_ns(t0);
  }

  const auto& acc = trace.accesses;
  const std::size_t n = acc.size();
  const std::size_t batch = std::max<std::uint32_t>(config.batch, 1);
  std::size_t i = 0;
  for (;;) {
    const std::uint64_t event = policy.next_event_ns();
    const std::uint64_t boundary = std::min(event, epoch_end);
    if (i < n && acc[i].time_ns < boundary) {
      std::size_t j = i;
      const std::size_t limit = std::min(n, i + batch);
      while (j < limit && acc[j].time_ns < boundary) {
        const Access& a = acc[j];
        const bool fast = tiers.is_fast(a.page);
        const std::uint64_t b = std::min<std::uint64_t>((a.time_ns - trace.start_ns) / r.bucket_ns, nbuckets - 1);
        ++bucket_all[b];
        bucket_fast[b] += fast ? 1 : 0;
        r.fast_accesses += fast ? 1 : 0;
        if (a.time_ns >= late_from_ns) {
          ++r.late_accesses;
          r.late_fast_accesses += fast ? 1 : 0;
        }
        if (epoch_counts[a.page]++ == 0) epoch_pages.push_back(a.page);
        tiers.touch(a.page, a.time_ns);
        ++j;
      }
      ctx.now_ns = acc[j - 1].time_ns;
      const auto t0 = Clock::now();
      policy.observe(std::span<const Access>(acc.data() + i, j - i), ctx);
      r.policy_ns += elapsed_ns(t0);
      i = j;
      continue;
    }
    // Nothing left before the boundary: run the policy's event or close the
    // epoch; stop once the next boundary lies past the end of the trace.
    if (boundary > trace.end_ns) break;
    if (event <= epoch_end) {
      ctx.now_ns = event;
      const auto t0 = Clock::now();
      policy.on_event(ctx);
      r.policy_ns += elapsed_ns(t0);
    } else {
      ctx.now_ns = epoch_end;
      close_epoch();
      epoch_end += epoch_ns;
    }
  }
  // A partial last epoch is not a full measurement window: left out of the ratio.

  r.policy_ns -= std::min(r.policy_ns, tiers.lru_ns());
  r.hardware_ns = policy.hardware_ns();
  r.policy_ns -= std::min(r.policy_ns, r.hardware_ns);
  r.hardware_ns_per_access = n ? static_cast<double>(r.hardware_ns) / static_cast<double>(n) : 0.0;
  r.accesses = n;
  r.fast_share = n ? static_cast<double>(r.fast_accesses) / static_cast<double>(n) : 0.0;
  r.late_share = r.late_accesses
                     ? static_cast<double>(r.late_fast_accesses) / static_cast<double>(r.late_accesses)
                     : 0.0;
  r.share_series.resize(nbuckets);
  for (std::uint32_t b = 0; b < nbuckets; ++b)
    r.share_series[b] = bucket_all[b] ? static_cast<double>(bucket_fast[b]) / static_cast<double>(bucket_all[b]) : -1.0;
  r.promotions = tiers.promotions();
  r.demotions = tiers.demotions();
  r.bytes_migrated = (r.promotions + r.demotions) * kPageBytes;
  r.migration_s = static_cast<double>(r.promotions + r.demotions) * static_cast<double>(config.migration_ns_per_page) / 1e9;
  r.has_ratio = has_ratio;
  r.ratio = r.ratio_epochs ? ratio_sum / static_cast<double>(r.ratio_epochs) : 0.0;
  r.mean_picks = r.ratio_epochs ? static_cast<double>(picks_total) / static_cast<double>(r.ratio_epochs) : 0.0;
  r.ns_per_access = n ? static_cast<double>(r.policy_ns) / static_cast<double>(n) : 0.0;
  r.cpu_ms_per_million = r.ns_per_access;  // ns per access == ms per million accesses
  r.counters = policy.counters();
  r.wall_s = std::chrono::duration<double>(Clock::now() - wall0).count();
  return r;
}

}  // namespace cxlpool::tiering::eval
