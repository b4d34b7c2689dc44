// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <set>
#include <vector>

#include "cxlpool/tiering/manager/nominator.hpp"
#include "cxlpool/tiering/manager/page_id.hpp"
#include "fake_placement.hpp"

namespace cxlpool::tiering::manager {
namespace {

using testing::trace_page;

std::unique_ptr<Nominator> make(const M5Config& c) {
  auto n = make_nominator(c);
  EXPECT_TRUE(n.has_value()) << n.error().message;
  return std::move(*n);
}

void record(Nominator& n, std::uint64_t page, std::uint64_t count, std::uint64_t words) {
  const PageKey k = trace_page(page);
  n.record(k, page_id(k), count, words);
}

std::uint64_t page_number(const Nomination& n) { return n.page.address >> 12; }

// Words [first, first + n).
std::uint64_t words_from(int first, int n) {
  return n == 64 ? ~0ULL : ((1ULL << n) - 1) << first;
}

TEST(HptNominator, FindsTheTrueHotPagesOnASkewedStream) {
  M5Config c;
  c.top_k = 128;
  c.sketch_width = 4096;
  auto nom = make(c);
  EXPECT_EQ(nom->mode(), NominatorMode::kHpt);
  // 100 hot pages with 60..159 accesses each, 20000 cold pages with 1..3,
  // one access at a time, interleaved at random.
  std::vector<std::uint64_t> stream;
  for (std::uint64_t p = 0; p < 100; ++p) {
    for (std::uint64_t i = 0; i < 60 + p; ++i) stream.push_back(1'000'000 + p * 7);
  }
  std::mt19937_64 rng(42);
  for (std::uint64_t p = 0; p < 20'000; ++p) {
    const std::uint64_t n = 1 + rng() % 3;
    for (std::uint64_t i = 0; i < n; ++i) stream.push_back(p);
  }
  std::shuffle(stream.begin(), stream.end(), rng);
  for (const std::uint64_t p : stream) record(*nom, p, 1, words_from(0, 64));

  const std::vector<Nomination> got = nom->end_epoch();
  ASSERT_GE(got.size(), 100u);
  std::set<std::uint64_t> top;
  for (std::size_t i = 0; i < 100; ++i) top.insert(page_number(got[i]));
  for (std::uint64_t p = 0; p < 100; ++p) EXPECT_EQ(top.count(1'000'000 + p * 7), 1u) << p;
  // Hottest first, estimates never below the truth.
  for (std::size_t i = 1; i < got.size(); ++i) EXPECT_GE(got[i - 1].count, got[i].count);
  for (const Nomination& n : got) {
    if (page_number(n) >= 1'000'000) {
      EXPECT_GE(n.count, 60 + (page_number(n) - 1'000'000) / 7);
    }
    EXPECT_GE(n.count, c.min_accesses);
  }
  EXPECT_EQ(page_number(got[0]), 1'000'000 + 99 * 7);
  // The epoch was reset.
  EXPECT_TRUE(nom->end_epoch().empty());
}

TEST(HptNominator, ClassifiesDenseSparseAndUnknown) {
  M5Config c;
  c.top_k = 16;
  auto nom = make(c);
  for (int i = 0; i < 10; ++i) {
    record(*nom, 1, 10, words_from(i % 4, 1));       // 4 distinct words: sparse
    record(*nom, 2, 10, words_from((i * 6) % 60, 6));  // ~40 words: dense
    record(*nom, 3, 10, 0);                          // no masks: unknown
    record(*nom, 4, 10, words_from(0, 16));          // exactly the sparse limit
    record(*nom, 5, 10, words_from(0, 17));          // one above it
  }
  record(*nom, 6, 1, words_from(0, 1));  // below min_accesses: not nominated
  const auto got = nom->end_epoch();
  ASSERT_EQ(got.size(), 5u);
  for (const Nomination& n : got) {
    EXPECT_EQ(n.count, 100u);
    switch (page_number(n)) {
      case 1:
        EXPECT_EQ(n.page_class, PageClass::kSparse);
        EXPECT_EQ(n.words, 0xfULL);
        break;
      case 2: EXPECT_EQ(n.page_class, PageClass::kDense); break;
      case 3:
        EXPECT_EQ(n.page_class, PageClass::kUnknown);
        EXPECT_EQ(n.words, 0u);
        break;
      case 4: EXPECT_EQ(n.page_class, PageClass::kSparse); break;
      case 5: EXPECT_EQ(n.page_class, PageClass::kDense); break;
      default: ADD_FAILURE() << "unexpected page " << page_number(n);
    }
  }
}

TEST(HptNominator, MinAccessesThreshold) {
  M5Config c;
  c.min_accesses = 5;
  auto nom = make(c);
  record(*nom, 1, 4, 0);
  record(*nom, 2, 5, 0);
  const auto got = nom->end_epoch();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(page_number(got[0]), 2u);
}

TEST(HptNominator, PagesInOtherAddressSpacesKeepTheirNames) {
  M5Config c;
  auto nom = make(c);
  const PageKey a{hal::AddressSpace::kProcess, 4242, 0x7f00'1234'5000};
  const PageKey b{hal::AddressSpace::kPoolRegion, 7, 0x5000};
  nom->record(a, page_id(a), 9, 0);
  nom->record(b, page_id(b), 8, 0);
  const auto got = nom->end_epoch();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].page, a);
  EXPECT_EQ(got[1].page, b);
}

TEST(HwtNominator, FindsThePagesHoldingTheHottestWords) {
  M5Config c;
  c.top_k = 64;
  // 40 sparse pages: 2 words each, 300 accesses in the epoch (150 per word).
  // 100 dense pages: all 64 words, 600 accesses (about 9 per word).
  // Page counts favour the dense pages; word counts the sparse ones.
  for (const NominatorMode mode : {NominatorMode::kHpt, NominatorMode::kHwt}) {
    c.nominator = mode;
    auto nom = make(c);
    for (std::uint64_t p = 0; p < 100; ++p) {
      if (p < 40) record(*nom, 5000 + p, 300, words_from(static_cast<int>(p % 32), 2));
      record(*nom, 9000 + p, 600, words_from(0, 64));
    }
    const auto got = nom->end_epoch();
    ASSERT_GE(got.size(), 40u);
    std::size_t sparse_first = 0;
    for (std::size_t i = 0; i < 40; ++i) {
      if (page_number(got[i]) < 9000) ++sparse_first;
    }
    if (mode == NominatorMode::kHpt) {
      EXPECT_EQ(sparse_first, 0u) << "HPT ranks by page count";
      continue;
    }
    EXPECT_EQ(nom->mode(), NominatorMode::kHwt);
    EXPECT_EQ(sparse_first, 40u) << "HWT ranks pages by their hot words";
    for (std::size_t i = 0; i < 40; ++i) {
      EXPECT_EQ(got[i].page_class, PageClass::kSparse);
      EXPECT_EQ(got[i].words, words_from(static_cast<int>((page_number(got[i]) - 5000) % 32), 2));
      EXPECT_GE(got[i].count, 300u);  // the sum of its hot words
    }
  }
}

TEST(HwtNominator, DensePagesWithManyHotWordsAreDense) {
  M5Config c;
  c.nominator = NominatorMode::kHwt;
  c.top_k = 8;  // 128 words: room for two dense pages
  auto nom = make(c);
  for (int i = 0; i < 5; ++i) {
    record(*nom, 1, 640, words_from(0, 64));
    record(*nom, 2, 64, 0);  // no mask: spread over the page, class unknown
  }
  const auto got = nom->end_epoch();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(page_number(got[0]), 1u);
  EXPECT_EQ(got[0].page_class, PageClass::kDense);
  EXPECT_EQ(got[0].count, 3200u);
  EXPECT_EQ(page_number(got[1]), 2u);
  EXPECT_EQ(got[1].page_class, PageClass::kUnknown);
  EXPECT_EQ(got[1].words, 0u);
}

TEST(HwtNominator, SpreadsCountsSmallerThanTheWordSet) {
  M5Config c;
  c.nominator = NominatorMode::kHwt;
  c.min_accesses = 1;
  auto nom = make(c);
  record(*nom, 1, 3, words_from(0, 8));  // 3 accesses over 8 words: 3 words get one each
  const auto got = nom->end_epoch();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].count, 3u);
  EXPECT_EQ(got[0].words, 0x7u);
}

TEST(Nominator, RejectsBadGeometry) {
  M5Config c;
  c.sketch_width = 1000;
  EXPECT_FALSE(make_nominator(c).has_value());
  c = M5Config{};
  c.hwt_capacity = 0;
  EXPECT_FALSE(make_hpt_nominator(c).has_value());
  c = M5Config{};
  c.top_k = 0;
  EXPECT_FALSE(make_hwt_nominator(c).has_value());
}

TEST(Classify, ByTouchedWords) {
  EXPECT_EQ(classify(0, 16), PageClass::kUnknown);
  EXPECT_EQ(classify(1, 16), PageClass::kSparse);
  EXPECT_EQ(classify(0xffff, 16), PageClass::kSparse);
  EXPECT_EQ(classify(0x1ffff, 16), PageClass::kDense);
  EXPECT_EQ(classify(~0ULL, 64), PageClass::kSparse);
  EXPECT_EQ(classify(1, 0), PageClass::kDense);
}

}  // namespace
}  // namespace cxlpool::tiering::manager
