// SPDX-License-Identifier: Apache-2.0
// RegionPool logic: accounting, quotas, names, handles, permissions and the
// migration bookkeeping. Page placement is a recording fake (this host has a
// single NUMA node); region files are real memfds.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "memfd_backing.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {
namespace {

class FakePlacement : public hal::PagePlacement {
 public:
  Result<void> bind(void*, size_t length, int node) override {
    binds.push_back({length, node});
    return {};
  }
  Result<std::vector<int>> query(void*, size_t length, size_t page_size) override {
    return std::vector<int>(length / page_size, query_node);
  }
  Result<hal::MoveStats> move(void*, size_t length, size_t page_size, int node, bool all) override {
    moves.push_back({node, all});
    hal::MoveStats s;
    s.pages_total = length / page_size;
    s.pages_moved = s.pages_total - 1;
    s.pages_absent = 1;
    return s;
  }
  std::vector<std::pair<size_t, int>> binds;
  std::vector<std::pair<int, bool>> moves;
  int query_node = 0;
};

std::vector<Tier> two_tiers() {
  Tier fast;
  fast.id = 0;
  fast.name = "dram0";
  fast.numa_node = 0;
  fast.capacity = 64 << 20;
  Tier slow;
  slow.id = 1;
  slow.name = "cxl1";
  slow.kind = proto::TierKind::kCxl;
  slow.numa_node = 1;
  slow.capacity = 32 << 20;
  return {fast, slow};
}

hal::Topology topology() {
  hal::Topology t;
  t.numa_present = true;
  hal::NumaNode n0;
  n0.id = 0;
  n0.cpus = {0};
  n0.total_bytes = n0.free_bytes = 1ull << 30;
  hal::NumaNode n1;
  n1.id = 1;
  n1.total_bytes = n1.free_bytes = 1ull << 30;
  t.nodes = {n0, n1};
  return t;
}

class RegionPoolTest : public ::testing::Test {
 protected:
  void make(PoolLimits limits = {}) {
    pool = std::make_unique<RegionPool>(two_tiers(), topology(), memfd_backing, &placement, limits);
  }
  Requester user(uid_t uid, gid_t gid = 100, uint64_t client = 1) {
    Requester r;
    r.uid = uid;
    r.gid = gid;
    r.client_id = client;
    return r;
  }
  FakePlacement placement;
  std::unique_ptr<RegionPool> pool;
};

TEST_F(RegionPoolTest, LeasedRegionIsAccountedInWholePagesAndFreedWithItsHandle) {
  make();
  auto r = pool->create({0, 5000, 0, proto::RegionKind::kLeased, {}, 0600}, user(1000));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ((*r)->size, 8192u);
  EXPECT_EQ(pool->tiers()[0].used, 8192u);
  EXPECT_EQ(pool->quota_used(1000, 0), 8192u);
  ASSERT_EQ(placement.binds.size(), 1u);
  EXPECT_EQ(placement.binds[0].second, 0);
  pool->release_handle((*r)->id);
  EXPECT_TRUE(pool->regions().empty());
  EXPECT_EQ(pool->tiers()[0].used, 0u);
  EXPECT_EQ(pool->quota_used(1000, 0), 0u);
  EXPECT_EQ(pool->counters().regions_destroyed, 1u);
}

TEST_F(RegionPoolTest, RejectsUnknownTierOversizeAndFullTier) {
  make({.max_region_size = 16 << 20});
  EXPECT_EQ(pool->create({7, 4096}, user(1)).error().code, ENOENT);
  EXPECT_EQ(pool->create({0, 17 << 20}, user(1)).error().code, E2BIG);
  ASSERT_TRUE(pool->create({1, 16 << 20}, user(1)));
  ASSERT_TRUE(pool->create({1, 16 << 20}, user(1)));
  auto full = pool->create({1, 4096}, user(1));
  ASSERT_FALSE(full);
  EXPECT_EQ(full.error().code, ENOSPC);
  EXPECT_NE(full.error().message.find("cxl1"), std::string::npos);
  EXPECT_EQ(pool->tiers()[1].used, 32u << 20);
  EXPECT_EQ(pool->counters().capacity_rejections, 1u);
}

TEST_F(RegionPoolTest, QuotaRulePrecedenceTierThenWildcardThenDefault) {
  PoolLimits limits;
  limits.quota_default_bytes = 1 << 20;
  limits.quota_rules = {{1000, "*", 4 << 20}, {1000, "cxl1", 2 << 20}};
  make(limits);
  EXPECT_EQ(pool->quota_limit(1000, 0), 4u << 20);
  EXPECT_EQ(pool->quota_limit(1000, 1), 2u << 20);
  EXPECT_EQ(pool->quota_limit(2000, 0), 1u << 20);
  ASSERT_TRUE(pool->create({1, 2 << 20}, user(1000)));
  auto over = pool->create({1, 4096}, user(1000));
  ASSERT_FALSE(over);
  EXPECT_EQ(over.error().code, EDQUOT);
  EXPECT_NE(over.error().message.find("quota"), std::string::npos);
  // Quotas are per uid: another user is limited by the default only.
  ASSERT_TRUE(pool->create({1, 1 << 20}, user(2000)));
  EXPECT_EQ(pool->create({1, 4096}, user(2000)).error().code, EDQUOT);
  EXPECT_EQ(pool->tiers()[1].used, 3u << 20);
}

TEST_F(RegionPoolTest, NamedRegionLivesUntilUnlinkedAndLastHandleGone) {
  make();
  auto created = pool->create({0, 4096, 0, proto::RegionKind::kNamed, "weights", 0640}, user(1000, 100));
  ASSERT_TRUE(created);
  const uint64_t id = (*created)->id;
  EXPECT_EQ(pool->create({0, 4096, 0, proto::RegionKind::kNamed, "weights", 0640}, user(1000)).error().code,
            EEXIST);
  pool->release_handle(id);  // creator closes: a named region stays
  ASSERT_NE(pool->find(id), nullptr);

  auto reader = pool->open_named("weights", false, user(2000, 100, 2));  // group may read
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(pool->open_named("weights", true, user(2000, 100, 2)).error().code, EACCES);  // not write
  EXPECT_EQ(pool->open_named("weights", false, user(3000, 300, 3)).error().code, EACCES);  // other: none
  const std::string denied = pool->open_named("weights", false, user(3000, 300, 3)).error().message;
  EXPECT_NE(denied.find("mode 0640 of 'weights'"), std::string::npos) << "octal: " << denied;
  EXPECT_EQ(pool->unlink_named("weights", user(2000, 100)).error().code, EPERM);
  EXPECT_EQ(pool->open_named("nope", false, user(1000)).error().code, ENOENT);

  ASSERT_TRUE(pool->unlink_named("weights", user(1000)));
  ASSERT_NE(pool->find(id), nullptr);  // the reader still holds it
  EXPECT_EQ(pool->open_named("weights", false, user(1000)).error().code, ENOENT);
  // The name is free again while the old region still exists.
  auto again = pool->create({0, 4096, 0, proto::RegionKind::kNamed, "weights", 0600}, user(1000));
  ASSERT_TRUE(again);
  pool->release_handle(id);
  EXPECT_EQ(pool->find(id), nullptr);
  EXPECT_EQ(pool->tiers()[0].used, 4096u);
}

TEST_F(RegionPoolTest, ModeChecksOwnerGroupSupplementaryGroupOtherAndAdmin) {
  Region r;
  r.owner_uid = 10;
  r.owner_gid = 20;
  r.mode = 0640;
  Requester owner{1, 10, 99, {}, false};
  Requester group{1, 11, 20, {}, false};
  Requester supplementary{1, 12, 99, {5, 20}, false};
  Requester other{1, 13, 99, {}, false};
  Requester admin{1, 14, 99, {}, true};
  EXPECT_TRUE(mode_allows(r, owner, true));
  EXPECT_TRUE(mode_allows(r, group, false));
  EXPECT_FALSE(mode_allows(r, group, true));
  EXPECT_TRUE(mode_allows(r, supplementary, false));
  EXPECT_FALSE(mode_allows(r, other, false));
  EXPECT_TRUE(mode_allows(r, admin, true));
  r.mode = 0;
  EXPECT_FALSE(mode_allows(r, owner, false));
}

TEST_F(RegionPoolTest, FailedPlacementCheckLeavesNothingBehind) {
  make();
  placement.query_node = 1;  // the kernel "put" the pages on the wrong node
  auto r = pool->create({0, 64 << 10, proto::kAllocPopulate}, user(1));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EIO);
  EXPECT_TRUE(pool->regions().empty());
  EXPECT_EQ(pool->tiers()[0].used, 0u);
  EXPECT_EQ(pool->counters().placement_mismatches, 1u);
  placement.query_node = 0;
  ASSERT_TRUE(pool->create({0, 64 << 10, proto::kAllocPopulate}, user(1)));
  EXPECT_EQ(pool->counters().placement_checks, 2u);
}

TEST_F(RegionPoolTest, MigrationRebindsMovesAndMovesTheAccounting) {
  make();
  auto r = pool->create({0, 1 << 20}, user(1000));
  ASSERT_TRUE(r);
  auto m = pool->migrate((*r)->id, 1, true);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->pages_total, 256u);
  EXPECT_EQ(m->pages_moved, 255u);
  EXPECT_EQ(m->pages_absent, 1u);
  EXPECT_EQ(m->bytes_moved, 255u * 4096);
  ASSERT_EQ(placement.moves.size(), 1u);
  EXPECT_EQ(placement.moves[0], std::make_pair(1, true));
  EXPECT_EQ(placement.binds.back().second, 1);  // future faults go to node 1
  EXPECT_EQ(pool->tiers()[0].used, 0u);
  EXPECT_EQ(pool->tiers()[1].used, 1u << 20);
  EXPECT_EQ(pool->quota_used(1000, 1), 1u << 20);
  EXPECT_EQ((*r)->tier_id, 1u);
  // Same tier: nothing to do.
  auto same = pool->migrate((*r)->id, 1, true);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->pages_already, 256u);
  EXPECT_EQ(placement.moves.size(), 1u);
  EXPECT_EQ(pool->migrate(999, 0, true).error().code, ENOENT);
  EXPECT_EQ(pool->migrate((*r)->id, 9, true).error().code, ENOENT);
}

TEST_F(RegionPoolTest, RegionFreedDuringMigrationGoesWhenTheMoveEnds) {
  make();
  auto r = pool->create({0, 1 << 20, 0, proto::RegionKind::kNamed, "moving", 0600}, user(1000));
  ASSERT_TRUE(r);
  const uint64_t id = (*r)->id;
  auto job = pool->begin_migration(id, 1, false);
  ASSERT_TRUE(job) << job.error().message;
  // Reserved on both tiers while the pages move.
  EXPECT_EQ(pool->tiers()[0].used, 1u << 20);
  EXPECT_EQ(pool->tiers()[1].used, 1u << 20);
  EXPECT_EQ(pool->begin_migration(id, 0, false).error().code, EBUSY);
  ASSERT_TRUE(pool->unlink_named("moving", user(1000)));
  pool->release_handle(id);
  ASSERT_NE(pool->find(id), nullptr);  // the worker still uses its mapping
  EXPECT_EQ(pool->begin_migration(id, 0, false).error().code, ENOENT);
  auto moved = job->run(&placement);
  auto reply = pool->finish_migration(*job, moved);
  EXPECT_EQ(reply.pages_moved, 255u);
  EXPECT_EQ(pool->find(id), nullptr);
  EXPECT_EQ(pool->tiers()[0].used, 0u);
  EXPECT_EQ(pool->tiers()[1].used, 0u);
  EXPECT_EQ(pool->quota_used(1000, 0) + pool->quota_used(1000, 1), 0u);
}

TEST_F(RegionPoolTest, MigrationRespectsTargetCapacity) {
  make();
  auto big = pool->create({0, 48 << 20}, user(1));
  ASSERT_TRUE(big);
  auto m = pool->migrate((*big)->id, 1, false);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, ENOSPC);
  EXPECT_EQ(pool->tiers()[0].used, 48u << 20);
  EXPECT_EQ(pool->tiers()[1].used, 0u);
}

TEST_F(RegionPoolTest, ReadOnlyClientDescriptorCannotBeMappedWritable) {
  make();
  auto r = pool->create({0, 4096}, user(1));
  ASSERT_TRUE(r);
  auto ro = pool->read_only_fd(**r);
  ASSERT_TRUE(ro);
  void* w = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ro->get(), 0);
  EXPECT_EQ(w, MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  void* rd = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, ro->get(), 0);
  ASSERT_NE(rd, MAP_FAILED);
  munmap(rd, 4096);
  // The region's own descriptor, which writable handles receive, maps writable.
  void* ok = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, (*r)->fd.get(), 0);
  ASSERT_NE(ok, MAP_FAILED);
  munmap(ok, 4096);
}

TEST_F(RegionPoolTest, ClearReleasesEverything) {
  make();
  ASSERT_TRUE(pool->create({0, 1 << 20}, user(1)));
  ASSERT_TRUE(pool->create({1, 1 << 20, 0, proto::RegionKind::kNamed, "x", 0600}, user(1)));
  pool->clear();
  EXPECT_TRUE(pool->regions().empty());
  EXPECT_EQ(pool->bytes_allocated(), 0u);
}

}  // namespace
}  // namespace cxlpool::daemon
