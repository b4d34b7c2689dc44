// SPDX-License-Identifier: Apache-2.0
// Single-thread Count-Min sketch update throughput for H = 2, 4, 8 and
// W = 4K..1M counters per row, with an exact std::unordered_map counter over
// the same Zipf page stream as the baseline. Best of several passes.
//
// Then the tracker CPU cost per million accesses of what a host runs when
// the trackers are software: the HPT (sketch + top-K) per access, the HPT
// with the HWT fed from its top-K as M5's controller does, and the M5 manager (HPT- and HWT-driven) per 100k-access epoch
// fed with the per-page lists a controller reports.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/mix.hpp"
#include "cxlpool/tiering/hot_page_tracker.hpp"
#include "cxlpool/tiering/hot_word_tracker.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "cxlpool/tiering/zipf.hpp"

namespace {

using cxlpool::tiering::CountMinSketch;
using Clock = std::chrono::steady_clock;

constexpr int kPasses = 5;

// Every page on the slow tier: the manager nominates and plans as for a
// fully slow placement (the plan itself is not applied).
class AllSlow final : public cxlpool::tiering::PlacementView {
 public:
  cxlpool::tiering::TierLocation locate(const cxlpool::tiering::PageKey&) const override {
    return cxlpool::tiering::TierLocation::kSlow;
  }
  void fast_pages(std::vector<cxlpool::tiering::PageKey>&, std::size_t) const override {}
};

template <typename F>
double best_rate(std::size_t n, F&& pass) {
  double best = 0;
  for (int i = 0; i < kPasses; ++i) {
    const auto t0 = Clock::now();
    pass();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (1u << 22);
  constexpr std::size_t kItems = 1u << 20;  // distinct pages (4 GiB of 4 KiB pages)
  auto zipf = cxlpool::tiering::ZipfGenerator::create(kItems, 0.99, 42);
  if (!zipf || n == 0) {
    std::fprintf(stderr, "sketch_bench: bad arguments\n");
    return 2;
  }
  std::vector<std::uint64_t> keys(n);
  for (auto& k : keys) k = zipf->next_key();

  std::uint64_t sink = 0;
  std::unordered_map<std::uint64_t, std::uint32_t> exact;
  const double map_rate = best_rate(n, [&] {
    exact.clear();
    for (auto k : keys) ++exact[k];
  });
  sink += exact.size();
  // Rough node-based footprint: key + value + next pointer + cached hash, plus buckets.
  const double map_mib = (exact.size() * (8 + 4 + 4 + 8 + 8) + exact.bucket_count() * 8) / 1048576.0;
  std::printf("stream: %zu keys, zipf s=0.99 over %zu pages (%zu distinct seen)\n", n, kItems, exact.size());
  std::printf("baseline unordered_map: %.1f M updates/s, ~%.1f MiB\n\n", map_rate / 1e6, map_mib);
  std::printf("%3s %8s %10s %14s %14s %10s\n", "H", "W", "MiB", "single M/s", "batch M/s", "batch/map");

  for (std::uint32_t rows : {2u, 4u, 8u}) {
    for (std::uint32_t width : {1u << 12, 1u << 14, 1u << 16, 1u << 18, 1u << 20}) {
      auto s = CountMinSketch::create({rows, width, false, 1});
      if (!s) return 1;
      const double single = best_rate(n, [&] {
        s->reset();
        for (auto k : keys) s->update(k);
      });
      sink += s->estimate(keys[0]);
      const double batch = best_rate(n, [&] {
        s->reset();
        s->update_batch(keys);
      });
      sink += s->estimate(keys[0]);
      std::printf("%3u %8u %10.2f %14.1f %14.1f %9.1fx\n", rows, width, s->memory_bytes() / 1048576.0,
                  single / 1e6, batch / 1e6, batch / map_rate);
    }
  }

  // Tracker CPU cost per million accesses (1 ns per access = 1 ms per million).
  std::printf("\ntracker CPU cost (best of %d passes, ms per million accesses)\n", kPasses);
  std::vector<std::uint64_t> addrs(n);
  {
    std::uint64_t x = 7;
    for (std::size_t i = 0; i < n; ++i) {
      x = cxlpool::tiering::mix64(x + i);
      addrs[i] = keys[i] % kItems * 4096 + (x % 64) * 64;  // one 64-byte word of the page
    }
  }
  auto ms_per_million = [&](double rate) { return 1e9 / rate; };
  {
    auto hpt = cxlpool::tiering::HotPageTracker::create({{4, 8192, false, 1}, 512});
    if (!hpt) return 1;
    const double rate = best_rate(n, [&] {
      hpt->end_epoch();
      for (auto k : keys) hpt->record(k);
    });
    sink += hpt->hot_pages().size();
    std::printf("  HPT record (H=4, W=8192, top 512):        %8.2f\n", ms_per_million(rate));
  }
  {
    // The HWT is fed as M5's controller feeds it: only accesses to pages
    // whose HPT estimate reaches the bottom of the HPT's top-K (refreshed
    // every 4096 accesses), so its table holds candidates, not every page.
    auto hpt = cxlpool::tiering::HotPageTracker::create({{4, 8192, false, 1}, 512});
    auto hwt = cxlpool::tiering::HotWordTracker::create({4096, 16});
    if (!hpt || !hwt) return 1;
    const double rate = best_rate(n, [&] {
      hpt->end_epoch();
      hwt->reset();
      std::uint32_t admit = 1;
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t page = addrs[i] >> 12;
        hpt->record(page);
        if ((i & 4095) == 4095) {
          const auto hot = hpt->hot_pages();
          admit = hot.size() < 512 ? 1 : std::max<std::uint32_t>(1, hot.back().count);
        }
        if (hpt->estimate(page) >= admit || hwt->find(page)) hwt->record(addrs[i], 64);
      }
    });
    sink += hwt->size();
    std::printf("  HPT + HWT fed from the HPT's top-K:       %8.2f\n", ms_per_million(rate));
  }
  for (auto mode : {cxlpool::tiering::NominatorMode::kHpt, cxlpool::tiering::NominatorMode::kHwt}) {
    constexpr std::size_t kEpoch = 100'000;
    // Per-page lists per epoch, as a controller's exact counters report them.
    std::vector<std::vector<cxlpool::hal::PageAccess>> epochs;
    for (std::size_t at = 0; at < n; at += kEpoch) {
      std::unordered_map<std::uint64_t, cxlpool::hal::PageAccess> pages;
      for (std::size_t i = at; i < n && i < at + kEpoch; ++i) {
        auto& p = pages[addrs[i] >> 12];
        p.address = addrs[i] >> 12 << 12;
        ++p.count;
        p.words |= 1ULL << ((addrs[i] >> 6) & 63);
      }
      auto& list = epochs.emplace_back();
      for (auto& [page, a] : pages) list.push_back(a);
    }
    AllSlow view;
    const double rate = best_rate(n, [&] {
      cxlpool::tiering::M5Config config;
      config.nominator = mode;
      auto m5 = cxlpool::tiering::M5Manager::create(config);
      if (!m5) std::abort();
      std::uint64_t now = 0;
      for (const auto& list : epochs) {
        m5->observe(list, view);
        now += 100'000'000;
        cxlpool::tiering::EpochInput input{now, {1u << 18, 0, 0}, {1u << 20, 1u << 20, 0}};
        auto plan = m5->end_epoch(input, view);
        m5->confirm({}, {});
        sink += plan.promote.size();
      }
    });
    std::printf("  M5 manager, %s-driven (per-page lists of %zu-access epochs): %8.2f\n",
                mode == cxlpool::tiering::NominatorMode::kHpt ? "HPT" : "HWT", kEpoch, ms_per_million(rate));
  }
  std::printf("\n(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
