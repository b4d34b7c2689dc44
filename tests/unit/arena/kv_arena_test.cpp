// SPDX-License-Identifier: Apache-2.0
// KvArena over the host backend with its own memory (no daemon): tensors are
// real memory where steps say so, step_async's worker maps ahead, freed
// rows' pages move (bytes and all) to rows that need them.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backing.hpp"
#include "host_vmm.hpp"
#include "kv_arena_impl.hpp"

namespace cxlpool::client::arena {
namespace {

constexpr uint64_t kPage = 64 * 1024;

cxlpool_kv_arena_config config(uint32_t async, uint64_t limit = 0) {
  cxlpool_kv_arena_config c{};
  c.layers = 2;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.dtype_bytes = 2;  // 64 B tokens: 1024 tokens per page
  c.max_batch = 8;
  c.max_context = 4096;
  c.page_bytes = kPage;
  c.region_bytes = 16 * kPage;
  c.memory_limit_bytes = limit;
  c.async = async;
  return c;
}

std::unique_ptr<KvArena> make(const cxlpool_kv_arena_config& c) {
  auto a = KvArena::create(nullptr, c, drivers::make_host_vmm(), make_own_backing());
  EXPECT_TRUE(a) << a.error().message;
  return a ? std::move(*a) : nullptr;
}

TEST(KvArena, TensorsDescribeOneReservation) {
  auto a = make(config(0));
  ASSERT_TRUE(a);
  auto k0 = a->tensor(0, CXLPOOL_ARENA_K);
  auto v0 = a->tensor(0, CXLPOOL_ARENA_V);
  auto k1 = a->tensor(1, CXLPOOL_ARENA_K);
  ASSERT_TRUE(k0 && v0 && k1);
  EXPECT_EQ(k0->token_stride, 64u);
  EXPECT_EQ(k0->row_stride, 4u * kPage);
  EXPECT_EQ(k0->bytes, 8u * 4 * kPage);
  EXPECT_EQ(v0->base, k0->base + k0->bytes);
  EXPECT_EQ(k1->base, k0->base + 2 * k0->bytes);
  EXPECT_EQ(k0->base % kPage, 0u);
  EXPECT_FALSE(a->tensor(2, CXLPOOL_ARENA_K));
  auto c = config(0);
  c.layout = CXLPOOL_ARENA_LAYOUT_FUSED;
  auto fused = make(c);
  ASSERT_TRUE(fused);
  auto f = fused->tensor(1, CXLPOOL_ARENA_V);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bytes, 4u * 8 * 4 * kPage);
  EXPECT_EQ(f->base, fused->tensor(0, 0)->base);
}

TEST(KvArena, StepMakesRowsWritable) {
  auto a = make(config(0));
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(8, 0);
  seq[*r] = 1500;
  ASSERT_TRUE(a->step(seq));
  for (uint32_t l = 0; l < 2; ++l) {
    for (uint32_t kind = 0; kind < 2; ++kind) {
      uint8_t* row = a->row_address(*r, l, kind);
      std::memset(row, int(l * 2 + kind + 1), 1500 * 64);
    }
  }
  EXPECT_EQ(a->row_address(*r, 1, 1)[1499 * 64], 4);
  const auto s = a->stats();
  EXPECT_EQ(s.mapped_bytes, 2u * 4 * kPage);
  EXPECT_EQ(s.steps, 1u);
  EXPECT_EQ(s.rows_active, 1u);
  EXPECT_EQ(s.region_bytes, 16u * kPage);
  EXPECT_GT(s.map_ns_total, 0u);
  EXPECT_GE(s.map_ns_max, s.map_ns_total / s.maps);
}

TEST(KvArena, AsyncStepsMapAheadOnTheWorker) {
  auto a = make(config(1));
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(8, 0);
  uint64_t maps_seen = 0;
  // Decode: one token per step; the worker keeps a page ahead.
  for (uint32_t t = 1; t <= 3000; ++t) {
    seq[*r] = t;
    ASSERT_TRUE(a->step_async(seq));
    if (t == 1) {
      EXPECT_EQ(a->step_async(seq).error().code, EBUSY);
    }
    ASSERT_TRUE(a->wait());
    // What the step asked for is there and writable.
    a->row_address(*r, 1, 1)[uint64_t{t - 1} * 64] = 7;
    EXPECT_GE(a->row_mapped_tokens(*r), std::min<uint32_t>(t + 1024, 4096)) << t;
    maps_seen = a->stats().maps;
  }
  const auto s = a->stats();
  EXPECT_EQ(s.async_steps, 3000u);
  EXPECT_EQ(maps_seen, 4u * 4);  // 4 pages per tensor: everything up to 4096
  EXPECT_TRUE(a->wait());        // nothing pending: fine
}

TEST(KvArena, AsyncStepReportsItsErrorOnWait) {
  auto a = make(config(1, 4 * kPage));  // one page group
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(8, 0);
  seq[*r] = 2000;  // 2 groups
  ASSERT_TRUE(a->step_async(seq));
  auto w = a->wait();
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ENOMEM);
  seq[3] = 1;  // not allocated: rejected at once
  EXPECT_EQ(a->step_async(seq).error().code, ENOENT);
}

TEST(KvArena, ReclaimedPagesMoveWithTheirBytes) {
  auto a = make(config(0, 4 * kPage));  // one page group
  ASSERT_TRUE(a);
  auto x = a->alloc_reqid();
  auto y = a->alloc_reqid();
  ASSERT_TRUE(x && y);
  std::vector<uint32_t> seq(8, 0);
  seq[*x] = 10;
  ASSERT_TRUE(a->step(seq));
  std::memset(a->row_address(*x, 0, 1), 0x5A, 640);
  seq[*y] = 5;
  EXPECT_EQ(a->step(seq).error().code, ENOMEM);
  ASSERT_TRUE(a->free_reqid(*x));
  seq[*x] = 0;
  ASSERT_TRUE(a->step(seq));
  // Moved, not copied and not cleared: the same physical page.
  EXPECT_EQ(a->row_address(*y, 0, 1)[639], 0x5A);
  EXPECT_EQ(a->stats().reuses, 4u);
  ASSERT_TRUE(a->free_reqid(*y));
  ASSERT_TRUE(a->trim(0));
  const auto s = a->stats();
  EXPECT_EQ(s.mapped_bytes, 0u);
  EXPECT_EQ(s.region_bytes, 0u);
}

}  // namespace
}  // namespace cxlpool::client::arena
