// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/controller_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "cxlpool/tiering/workloads.hpp"

namespace cxlpool::tiering {
namespace {

// Straightforward reference counts: one map entry per page and per word.
struct Naive {
  std::map<std::uint64_t, std::uint64_t> pac;
  std::map<std::uint64_t, std::uint64_t> wac;
  std::map<std::uint64_t, std::uint64_t> masks;

  void access(const TraceRecord& r) {
    if (r.size == 0) return;
    const std::uint64_t last = r.address + (r.size - 1);
    std::set<std::uint64_t> pages;
    for (std::uint64_t w = r.address >> 6; w <= last >> 6; ++w) {
      ++wac[w];
      pages.insert(w >> 6);
      masks[w >> 6] |= 1ull << (w & 63);
    }
    for (auto p : pages) ++pac[p];
  }
};

std::vector<TraceRecord> random_trace(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<TraceRecord> t;
  for (std::size_t i = 0; i < n; ++i) {
    // Mostly small accesses over 256 pages, skewed toward low pages (u^3),
    // some unaligned ones that cross words and pages.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const auto page = static_cast<std::uint64_t>(256 * u * u * u);
    const std::uint64_t address = 0x40000000 + page * 4096 + rng() % 4096;
    const std::uint32_t size = rng() % 10 == 0 ? static_cast<std::uint32_t>(1 + rng() % 9000)
                                               : static_cast<std::uint32_t>(1 + rng() % 64);
    t.push_back({i, address, size, rng() % 3 == 0});
  }
  return t;
}

ControllerModelConfig small_config() {
  ControllerModelConfig c;
  c.hpt.sketch.width = 1024;
  c.hpt.top_k = 32;
  c.hwt.capacity = 64;
  c.expected_pages = 16;  // forces the exact tables to grow
  c.expected_words = 16;
  return c;
}

TEST(ControllerModel, RejectsBadConfig) {
  ControllerModelConfig c;
  c.expected_pages = 0;
  EXPECT_EQ(ControllerModel::create(c).error().code, EINVAL);
  c = {};
  c.hpt.sketch.width = 1000;  // not a power of two
  EXPECT_EQ(ControllerModel::create(c).error().code, EINVAL);
  c = {};
  c.hwt.capacity = 0;
  EXPECT_EQ(ControllerModel::create(c).error().code, EINVAL);
}

TEST(ControllerModel, ExactCountersMatchANaiveCount) {
  auto model = ControllerModel::create(small_config());
  ASSERT_TRUE(model.has_value());
  const auto trace = random_trace(20000, 3);
  Naive naive;
  for (const TraceRecord& r : trace) {
    model->access(r);
    naive.access(r);
  }
  ASSERT_EQ(model->pages_touched(), naive.pac.size());
  ASSERT_EQ(model->words_touched(), naive.wac.size());
  for (const auto& [page, n] : naive.pac) {
    ASSERT_EQ(model->pac(page), n) << page;
    ASSERT_EQ(model->word_mask(page), naive.masks[page]) << page;
  }
  for (const auto& [word, n] : naive.wac) ASSERT_EQ(model->wac(word), n) << word;
  EXPECT_EQ(model->pac(1), 0u);
  EXPECT_EQ(model->wac(1), 0u);

  const ControllerEpoch e = model->end_epoch();
  EXPECT_EQ(e.index, 0u);
  EXPECT_EQ(e.records, trace.size());
  ASSERT_EQ(e.pages.size(), naive.pac.size());
  std::uint64_t page_sum = 0, word_sum = 0;
  auto it = naive.pac.begin();
  for (const PageCount& p : e.pages) {
    ASSERT_EQ(p.page, it->first);  // ascending
    ASSERT_EQ(p.count, it->second);
    ASSERT_EQ(p.words, naive.masks[p.page]);
    page_sum += p.count;
    ++it;
  }
  for (const auto& [w, n] : naive.wac) word_sum += n;
  EXPECT_EQ(e.page_accesses, page_sum);
  EXPECT_EQ(e.word_accesses, word_sum);

  // The sketch never underestimates; its top pages are the true hot pages.
  ASSERT_FALSE(e.hpt_hot_pages.empty());
  for (const HotPage& h : e.hpt_hot_pages) EXPECT_GE(h.count, naive.pac[h.key]) << h.key;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> truth;
  for (const auto& [page, n] : naive.pac) truth.push_back({n, page});
  std::sort(truth.rbegin(), truth.rend());
  std::set<std::uint64_t> true_top;
  for (int i = 0; i < 16; ++i) true_top.insert(truth[i].second);
  int found = 0;
  for (const HotPage& h : e.hpt_hot_pages) found += true_top.count(h.key);
  EXPECT_GE(found, 14);
  // HWT masks never claim a word the exact counters did not see.
  ASSERT_FALSE(e.hwt_pages.empty());
  for (const PageWords& w : e.hwt_pages) {
    EXPECT_EQ(w.words & ~naive.masks[w.page], 0u) << w.page;
    EXPECT_LE(w.accesses, naive.pac[w.page]);
  }
}

TEST(ControllerModel, EndEpochResetsEverything) {
  auto model = ControllerModel::create(small_config());
  const auto trace = random_trace(5000, 4);
  model->access(trace);
  const auto first = model->end_epoch();
  EXPECT_EQ(model->pages_touched(), 0u);
  EXPECT_EQ(model->words_touched(), 0u);
  EXPECT_EQ(model->pac(first.pages.front().page), 0u);
  EXPECT_EQ(model->hpt().sketch().total(), 0u);
  EXPECT_EQ(model->hwt().size(), 0u);
  EXPECT_EQ(model->epoch_index(), 1u);
  // The same stream again gives the same epoch.
  model->access(trace);
  const auto second = model->end_epoch();
  EXPECT_EQ(second.index, 1u);
  EXPECT_EQ(second.pages, first.pages);
  EXPECT_EQ(second.hpt_hot_pages, first.hpt_hot_pages);
  // Many epochs: stamps keep old entries dead.
  for (int i = 0; i < 300; ++i) {
    model->access({static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(i) * 4096, 64, false});
    const auto e = model->end_epoch();
    ASSERT_EQ(e.pages.size(), 1u);
    ASSERT_EQ(e.pages[0].page, static_cast<std::uint64_t>(i));
    ASSERT_EQ(e.pages[0].count, 1u);
  }
}

TEST(ControllerModel, SpansAndEdges) {
  auto model = ControllerModel::create(small_config());
  model->access({0, 4096 - 8, 16, false});  // crosses a page: both pages count once
  EXPECT_EQ(model->pac(0), 1u);
  EXPECT_EQ(model->pac(1), 1u);
  EXPECT_EQ(model->word_mask(0), 1ull << 63);
  EXPECT_EQ(model->word_mask(1), 1ull);
  model->access({1, 8192, 4096, true});  // a whole page: every word once
  EXPECT_EQ(model->word_mask(2), ~0ull);
  EXPECT_EQ(model->wac(8192 >> 6), 1u);
  EXPECT_EQ(model->wac((8192 + 4095) >> 6), 1u);
  model->access({2, 12288, 0, false});  // size 0 touches nothing
  EXPECT_EQ(model->pac(3), 0u);
  model->access({3, ~0ull - 10, 64, false});  // clipped at the top of the space
  EXPECT_EQ(model->pac(~0ull >> 12), 1u);
  EXPECT_EQ(model->wac(~0ull >> 6), 1u);
  EXPECT_EQ(model->end_epoch().records, 3u);
}

TEST(ControllerModel, TrueTopKOrdersByCountThenPage) {
  auto model = ControllerModel::create(small_config());
  const std::uint64_t counts[] = {5, 9, 5, 1, 9, 2};
  for (std::uint64_t p = 0; p < 6; ++p) {
    for (std::uint64_t i = 0; i < counts[p]; ++i) model->access({0, p * 4096, 8, false});
  }
  const auto top = model->true_top_k(4);
  ASSERT_EQ(top.size(), 4u);
  EXPECT_EQ(top[0].page, 1u);
  EXPECT_EQ(top[1].page, 4u);
  EXPECT_EQ(top[2].page, 0u);
  EXPECT_EQ(top[3].page, 2u);
  EXPECT_EQ(top[0].count, 9u);
  EXPECT_EQ(model->true_top_k(100).size(), 6u);
  EXPECT_TRUE(model->true_top_k(0).empty());
}

TEST(ControllerModel, KeepsUpWithAGeneratedWorkload) {
  WorkloadConfig w;
  w.kind = WorkloadKind::kSparseKv;
  w.footprint_bytes = 64ull << 20;
  w.accesses = 1'000'000;
  auto trace = generate_workload(w);
  ASSERT_TRUE(trace.has_value());
  auto model = ControllerModel::create({});
  ASSERT_TRUE(model.has_value());
  model->access(*trace);
  EXPECT_GT(model->pages_touched(), 1000u);
  EXPECT_GT(model->memory_bytes(), model->pages_touched() * 16);
  const auto top = model->true_top_k(512);
  const auto e = model->end_epoch();
  for (const HotPage& h : e.hpt_hot_pages) {
    const auto it = std::lower_bound(e.pages.begin(), e.pages.end(), h.key,
                                     [](const PageCount& p, std::uint64_t k) { return p.page < k; });
    ASSERT_NE(it, e.pages.end());
    ASSERT_EQ(it->page, h.key);
    EXPECT_GE(h.count, it->count);
  }
  EXPECT_EQ(top.size(), 512u);
}

}  // namespace
}  // namespace cxlpool::tiering
