// SPDX-License-Identifier: Apache-2.0
// ArenaCore's memory logic against a fake GpuVmm that checks every call:
// growth, in-place reuse of freed rows, reclaim of freed rows' pages under
// the limit, all-or-nothing ENOMEM, trim, map-ahead, failure paths.
#include <gtest/gtest.h>

#include <atomic>

#include <vector>

#include "arena_core.hpp"
#include "support/fake_vmm.hpp"

namespace cxlpool::client::arena {
namespace {

using test::CountingBacking;
using test::CountingBackingState;
using test::FakeVmm;
using test::FakeVmmState;

constexpr uint64_t kPage = 64 * 1024;

struct Fixture {
  std::shared_ptr<FakeVmmState> vmm = std::make_shared<FakeVmmState>();
  std::shared_ptr<CountingBackingState> backing = std::make_shared<CountingBackingState>();
  ArenaGeometry geo;
  std::unique_ptr<ArenaCore> core;

  // A new row that `seq` asks to hold `tokens` (not stepped yet).
  uint32_t row(std::vector<uint32_t>& seq, uint32_t tokens) {
    auto id = core->alloc_reqid();
    if (!id) {
      ADD_FAILURE() << id.error().message;
      return 0;
    }
    seq[*id] = tokens;
    return *id;
  }

  // 2 layers (4 tensors), 4 rows, a page holds 256 tokens, 1024 tokens per
  // row; pieces of 8 pages.
  explicit Fixture(uint64_t limit = 0, uint32_t rows = 4) {
    cxlpool_kv_arena_config c{};
    c.layers = 2;
    c.kv_heads = 1;
    c.head_dim = 64;
    c.dtype_bytes = 4;
    c.max_batch = rows;
    c.max_context = 1024;
    c.page_bytes = kPage;
    c.region_bytes = 8 * kPage;
    geo = *make_geometry(c, kPage);
    auto created = ArenaCore::create(geo, std::make_unique<FakeVmm>(vmm), std::make_unique<CountingBacking>(backing),
                                     limit);
    EXPECT_TRUE(created) << created.error().message;
    core = std::move(*created);
  }
  ~Fixture() {
    core.reset();
    EXPECT_EQ(vmm->violation, "");
    EXPECT_TRUE(vmm->maps.empty());
    EXPECT_TRUE(vmm->ranges.empty());
    EXPECT_EQ(backing->live, 0);
  }
  uint64_t va(uint32_t tensor, uint32_t row, uint32_t page) const { return core->base() + geo.page_offset(tensor, row, page); }
};

TEST(ArenaCore, RowsGrowPageByPageInEveryTensor) {
  Fixture f;
  auto r0 = f.core->alloc_reqid();
  auto r1 = f.core->alloc_reqid();
  ASSERT_TRUE(r0 && r1);
  EXPECT_NE(*r0, *r1);
  std::vector<uint32_t> seq(4, 0);
  seq[*r0] = 1;
  seq[*r1] = 300;
  ASSERT_TRUE(f.core->step(seq, 0));
  // r0: 1 page, r1: 2 pages, in each of 4 tensors.
  EXPECT_EQ(f.vmm->maps.size(), (1u + 2u) * 4);
  for (uint32_t t = 0; t < 4; ++t) {
    EXPECT_TRUE(f.vmm->maps.count(f.va(t, *r0, 0)));
    EXPECT_TRUE(f.vmm->maps.count(f.va(t, *r1, 1)));
    EXPECT_FALSE(f.vmm->maps.count(f.va(t, *r0, 1)));
  }
  EXPECT_EQ(f.core->mapped_tokens(*r1), 512u);
  // Growing inside a page maps nothing.
  seq[*r0] = 256;
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.vmm->map_calls, 12u);
  auto s = f.core->stats();
  EXPECT_EQ(s.mapped_bytes, 12 * kPage);
  EXPECT_EQ(s.pages_in_use, 12u);
  EXPECT_EQ(s.pages_deferred, 0u);
  EXPECT_EQ(s.rows_active, 2u);
  EXPECT_EQ(s.held_bytes, 16 * kPage);  // two pieces of 8 pages
  EXPECT_EQ(f.backing->acquired, 2);
}

TEST(ArenaCore, ValidationLeavesEverythingAlone) {
  Fixture f;
  auto r = f.core->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(4, 0);
  seq[*r] = 1025;
  EXPECT_EQ(f.core->step(seq, 0).error().code, ERANGE);
  seq[*r] = 10;
  seq[(*r + 1) % 4] = 5;  // not allocated
  EXPECT_EQ(f.core->step(seq, 0).error().code, ENOENT);
  std::vector<uint32_t> too_many(5, 0);
  EXPECT_EQ(f.core->step(too_many, 0).error().code, EINVAL);
  EXPECT_EQ(f.vmm->map_calls, 0u);
  EXPECT_EQ(f.core->free_reqid(3 - *r == *r ? 2 : 3 - *r).error().code, ENOENT);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f.core->alloc_reqid());
  EXPECT_EQ(f.core->alloc_reqid().error().code, ENOSPC);
}

TEST(ArenaCore, FreedRowIsReusedInPlace) {
  Fixture f;
  auto r = f.core->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(4, 0);
  seq[*r] = 700;  // 3 pages
  ASSERT_TRUE(f.core->step(seq, 0));
  ASSERT_TRUE(f.core->free_reqid(*r));
  auto s = f.core->stats();
  EXPECT_EQ(s.pages_deferred, 12u);
  EXPECT_EQ(s.pages_in_use, 0u);
  EXPECT_EQ(s.mapped_bytes, 12 * kPage);  // deferred: still mapped
  // The next request gets the row that still has pages: no mapping at all.
  auto again = f.core->alloc_reqid();
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *r);
  seq.assign(4, 0);
  seq[*again] = 600;
  const auto maps_before = f.vmm->map_calls;
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.vmm->map_calls, maps_before);
  s = f.core->stats();
  EXPECT_EQ(s.reuses, 12u);
  EXPECT_EQ(s.pages_deferred, 0u);
  EXPECT_EQ(s.pages_in_use, 12u);
}

TEST(ArenaCore, LimitReclaimsFreedPagesAndFailsAllOrNothing) {
  // 4 tensors * 64 KiB = one page group is 256 KiB; the limit holds 3 groups.
  Fixture f(3 * 4 * kPage);
  std::vector<uint32_t> seq(4, 0);
  const uint32_t a = f.row(seq, 512);  // 2 groups
  const uint32_t b = f.row(seq, 0);
  seq[b] = 1;    // 1 group
  ASSERT_TRUE(f.core->step(seq, 0));
  // b would need a second group: over the limit, nothing freed.
  seq[b] = 257;
  auto over = f.core->step(seq, 0);
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, ENOMEM);
  EXPECT_EQ(f.core->stats().mapped_bytes, 12 * kPage);
  // a finishes: its pages are deferred, and b takes a's tail group.
  ASSERT_TRUE(f.core->free_reqid(a));
  seq[a] = 0;
  const auto unmaps_before = f.vmm->unmap_calls;
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.vmm->unmap_calls - unmaps_before, 4u);  // moved, one per tensor
  auto s = f.core->stats();
  EXPECT_EQ(s.mapped_bytes, 12 * kPage);
  EXPECT_EQ(s.pages_deferred, 4u);
  EXPECT_EQ(s.pages_in_use, 8u);
  EXPECT_EQ(s.reuses, 4u);
  EXPECT_EQ(f.core->mapped_tokens(a), 256u);
  // The moved pages are the ones a had at its page 1.
  // (same handle/offset now under b's page 1)
  // Asking for more than free + deferred fails without touching anything.
  seq[b] = 1024;  // 4 groups: b has 2, 1 deferred left, limit full
  const auto maps_before = f.vmm->map_calls;
  EXPECT_EQ(f.core->step(seq, 0).error().code, ENOMEM);
  EXPECT_EQ(f.vmm->map_calls, maps_before);
}

TEST(ArenaCore, MovedPagesKeepTheirPhysicalMemory) {
  Fixture f(2 * 4 * kPage);
  std::vector<uint32_t> seq(4, 0);
  const uint32_t a = f.row(seq, 300);  // 2 groups = the limit
  const uint32_t b = f.row(seq, 0);
  ASSERT_TRUE(f.core->step(seq, 0));
  std::vector<std::pair<hal::VmmHandle, uint64_t>> tail;
  for (uint32_t t = 0; t < 4; ++t) tail.push_back(f.vmm->maps.at(f.va(t, a, 1)));
  ASSERT_TRUE(f.core->free_reqid(a));
  seq.assign(4, 0);
  seq[b] = 10;
  ASSERT_TRUE(f.core->step(seq, 0));
  for (uint32_t t = 0; t < 4; ++t) {
    EXPECT_EQ(f.vmm->maps.at(f.va(t, b, 0)), tail[t]) << "tensor " << t;
    EXPECT_FALSE(f.vmm->maps.count(f.va(t, a, 1)));
  }
}

TEST(ArenaCore, TrimUnmapsDeferredPagesAndReturnsPieces) {
  Fixture f;
  std::vector<uint32_t> rows;
  std::vector<uint32_t> seq(4, 0);
  for (int i = 0; i < 4; ++i) {
    auto r = f.core->alloc_reqid();
    ASSERT_TRUE(r);
    rows.push_back(*r);
    seq[*r] = 1024;  // 4 groups each: 64 pages = 8 pieces
  }
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.backing->live, 8);
  ASSERT_TRUE(f.core->trim(0));  // nothing deferred: nothing to do
  EXPECT_EQ(f.core->stats().mapped_bytes, 64 * kPage);
  for (uint32_t r : rows) ASSERT_TRUE(f.core->free_reqid(r));
  ASSERT_TRUE(f.core->trim(16 * kPage));
  auto s = f.core->stats();
  EXPECT_EQ(s.mapped_bytes, 16 * kPage);
  EXPECT_EQ(s.pages_deferred, 16u);
  EXPECT_EQ(f.backing->discards, 48);
  ASSERT_TRUE(f.core->trim(0));
  s = f.core->stats();
  EXPECT_EQ(s.mapped_bytes, 0u);
  EXPECT_EQ(s.held_bytes, 0u);
  EXPECT_EQ(f.backing->live, 0);
}

TEST(ArenaCore, MapAheadIsBestEffort) {
  Fixture f(3 * 4 * kPage);
  std::vector<uint32_t> seq(4, 0);
  const uint32_t r = f.row(seq, 200);
  EXPECT_FALSE(f.core->satisfied(seq, 256));
  ASSERT_TRUE(f.core->step(seq, 256));  // 1 page needed, 2 with look-ahead
  EXPECT_EQ(f.core->mapped_tokens(r), 512u);
  EXPECT_TRUE(f.core->satisfied(seq, 256));
  seq[r] = 700;  // 3 needed, 4 with look-ahead: the limit stops at 3, no error
  ASSERT_TRUE(f.core->step(seq, 256));
  EXPECT_EQ(f.core->mapped_tokens(r), 768u);
}

// A caller that stops waiting for speculation (step_async's wait) gets the
// pages its step needs and no more; the next step maps ahead again.
TEST(ArenaCore, StoppedMapAheadStillMapsWhatTheStepNeeds) {
  Fixture f;
  std::vector<uint32_t> seq(4, 0);
  const uint32_t r = f.row(seq, 300);  // 2 pages needed, 3 with look-ahead
  const std::atomic<bool> stop{true};
  ASSERT_TRUE(f.core->step(seq, 256, &stop));
  EXPECT_EQ(f.core->mapped_tokens(r), 512u);
  EXPECT_FALSE(f.core->satisfied(seq, 256));
  const std::atomic<bool> go{false};
  ASSERT_TRUE(f.core->step(seq, 256, &go));
  EXPECT_EQ(f.core->mapped_tokens(r), 768u);
  EXPECT_TRUE(f.core->satisfied(seq, 256));
}

TEST(ArenaCore, SourceRefusalFallsBackToFreedPages) {
  Fixture f;
  f.backing->refuse_after = 1;  // one piece of 8 pages = 2 groups
  auto a = f.core->alloc_reqid();
  auto b = f.core->alloc_reqid();
  ASSERT_TRUE(a && b);
  std::vector<uint32_t> seq(4, 0);
  seq[*a] = 512;
  ASSERT_TRUE(f.core->step(seq, 0));
  seq[*b] = 1;
  auto refused = f.core->step(seq, 0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, EDQUOT);
  ASSERT_TRUE(f.core->free_reqid(*a));
  seq[*a] = 0;
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.core->mapped_tokens(*b), 256u);
}

TEST(ArenaCore, FailedMapLeavesAConsistentArena) {
  Fixture f;
  std::vector<uint32_t> seq(4, 0);
  const uint32_t r = f.row(seq, 300);
  f.vmm->fail_map_in = 5;  // the second group's second tensor
  auto failed = f.core->step(seq, 0);
  ASSERT_FALSE(failed);
  EXPECT_EQ(failed.error().code, ENOMEM);
  EXPECT_EQ(f.core->mapped_tokens(r), 256u);
  EXPECT_EQ(f.vmm->maps.size(), 4u);
  ASSERT_TRUE(f.core->step(seq, 0));
  EXPECT_EQ(f.core->mapped_tokens(r), 512u);
  EXPECT_EQ(f.vmm->maps.size(), 8u);
}

}  // namespace
}  // namespace cxlpool::client::arena
