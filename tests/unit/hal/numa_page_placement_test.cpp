// SPDX-License-Identifier: Apache-2.0
// Really binds, queries and moves pages on this host's NUMA nodes.
#include "numa_page_placement.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <set>

#include <gtest/gtest.h>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/topology.hpp"
#include "numa_probe.hpp"

namespace cxlpool::drivers {
namespace {

const size_t kPage = static_cast<size_t>(sysconf(_SC_PAGESIZE));

hal::Topology host_topology() {
  auto t = hal::discover_topology(SysfsRoot("/"));
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error().message);
  return t ? *t : hal::Topology{};
}

// A node id the host has no memory on (every host has fewer nodes than this loop tries).
int node_without_memory(const hal::Topology& t) {
  std::set<int> ids;
  for (const auto& n : t.nodes) ids.insert(n.id);
  int id = 0;
  while (ids.count(id) != 0) ++id;
  return id;
}

Mapping anonymous(size_t pages) {
  auto m = Mapping::map(pages * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
  EXPECT_TRUE(m.has_value());
  return m ? std::move(*m) : Mapping{};
}

struct SharedMemfd {
  UniqueFd fd;
  Mapping map;
};

SharedMemfd shared_memfd(size_t pages) {
  SharedMemfd s;
  s.fd.reset(memfd_create("numa-test", MFD_CLOEXEC));
  EXPECT_TRUE(s.fd.valid());
  EXPECT_EQ(ftruncate(s.fd.get(), static_cast<off_t>(pages * kPage)), 0);
  auto m = Mapping::map(pages * kPage, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd.get());
  EXPECT_TRUE(m.has_value());
  if (m) s.map = std::move(*m);
  return s;
}

void touch(const Mapping& m, size_t first_page, size_t pages) {
  for (size_t i = first_page; i < first_page + pages; ++i) m.data()[i * kPage] = std::byte{1};
}

class NumaPlacement : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto report = probe_numa();
    if (report.state != hal::BackendState::kAvailable) GTEST_SKIP() << report.detail;
    topology_ = host_topology();
    ASSERT_FALSE(topology_.nodes.empty());
    node_ = topology_.nodes[0].id;
  }
  hal::Topology topology_;
  int node_ = 0;
};

TEST_F(NumaPlacement, AnonymousBindQueryMove) {
  constexpr size_t kPages = 64;
  Mapping m = anonymous(kPages);
  auto placement = make_numa_page_placement();
  ASSERT_TRUE(placement->bind(m.addr(), m.length(), node_).has_value());

  auto before = placement->query(m.addr(), m.length(), kPage);
  ASSERT_TRUE(before.has_value()) << before.error().message;
  ASSERT_EQ(before->size(), kPages);
  // Never touched: -ENOENT, or -EFAULT on kernels before 6.x (no page table yet).
  for (int s : *before) EXPECT_TRUE(s == -ENOENT || s == -EFAULT) << s;

  touch(m, 0, kPages);
  auto after = placement->query(m.addr(), m.length(), kPage);
  ASSERT_TRUE(after.has_value()) << after.error().message;
  for (int s : *after) EXPECT_EQ(s, node_);

  auto stats = placement->move(m.addr(), m.length(), kPage, node_, false);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->pages_total, kPages);
  EXPECT_EQ(stats->pages_already, kPages);
  EXPECT_EQ(stats->pages_moved, 0u);
  EXPECT_EQ(stats->pages_absent, 0u);
  EXPECT_EQ(stats->pages_failed, 0u);
  EXPECT_EQ(stats->first_error, 0);
}

TEST_F(NumaPlacement, SharedMemfdHalfTouched) {
  constexpr size_t kPages = 40;
  SharedMemfd s = shared_memfd(kPages);
  auto placement = make_numa_page_placement();
  ASSERT_TRUE(placement->bind(s.map.addr(), s.map.length(), node_).has_value());
  touch(s.map, 0, kPages / 2);

  auto where = placement->query(s.map.addr(), s.map.length(), kPage);
  ASSERT_TRUE(where.has_value()) << where.error().message;
  for (size_t i = 0; i < kPages; ++i) EXPECT_EQ((*where)[i], i < kPages / 2 ? node_ : -ENOENT) << i;

  // The memfd is mapped by this process only, so MOVE_ALL behaves as MOVE;
  // as root it must not be refused.
  const bool all = geteuid() == 0;
  auto stats = placement->move(s.map.addr(), s.map.length(), kPage, node_, all);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->pages_total, kPages);
  EXPECT_EQ(stats->pages_already, kPages / 2);
  EXPECT_EQ(stats->pages_absent, kPages / 2);
  EXPECT_EQ(stats->pages_failed, 0u);
}

TEST_F(NumaPlacement, BatchedQueryMatchesSingleCall) {
  constexpr size_t kPages = 50;
  Mapping m = anonymous(kPages);
  touch(m, 0, kPages);
  std::memset(m.data() + 10 * kPage, 0, kPage);  // keep a mix of pages
  munmap(m.data() + 20 * kPage, kPage);           // one hole: -EFAULT or -ENOENT
  NumaPagePlacement batched(7);
  NumaPagePlacement single(1024);
  auto a = batched.query(m.addr(), m.length(), kPage);
  auto b = single.query(m.addr(), m.length(), kPage);
  ASSERT_TRUE(a.has_value()) << a.error().message;
  ASSERT_TRUE(b.has_value()) << b.error().message;
  EXPECT_EQ(*a, *b);
  EXPECT_LT((*a)[20], 0);
  EXPECT_EQ((*a)[49], node_);

  auto stats = batched.move(m.addr(), m.length(), kPage, node_, false);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->pages_total, kPages);
  EXPECT_EQ(stats->pages_already, kPages - 1);
  EXPECT_EQ(stats->pages_absent, 1u);  // the hole
  EXPECT_EQ(stats->pages_failed, 0u);
}

TEST_F(NumaPlacement, NodeWithoutMemoryIsEnodev) {
  const int missing = node_without_memory(topology_);
  Mapping m = anonymous(4);
  touch(m, 0, 4);
  auto placement = make_numa_page_placement();
  auto bound = placement->bind(m.addr(), m.length(), missing);
  ASSERT_FALSE(bound.has_value());
  EXPECT_EQ(bound.error().code, ENODEV) << bound.error().message;
  EXPECT_NE(bound.error().message.find("node " + std::to_string(missing)), std::string::npos);
  auto moved = placement->move(m.addr(), m.length(), kPage, missing, false);
  ASSERT_FALSE(moved.has_value());
  EXPECT_EQ(moved.error().code, ENODEV) << moved.error().message;
}

TEST_F(NumaPlacement, InvalidArguments) {
  Mapping m = anonymous(4);
  auto placement = make_numa_page_placement();
  EXPECT_EQ(placement->bind(m.addr(), m.length(), -1).error().code, EINVAL);
  EXPECT_EQ(placement->bind(m.addr(), m.length(), 1 << 20).error().code, EINVAL);
  EXPECT_EQ(placement->bind(m.data() + 1, kPage, node_).error().code, EINVAL);
  EXPECT_EQ(placement->bind(m.addr(), 0, node_).error().code, EINVAL);
  EXPECT_EQ(placement->query(m.data() + 1, kPage, kPage).error().code, EINVAL);
  EXPECT_EQ(placement->query(m.addr(), kPage, 0).error().code, EINVAL);
  EXPECT_EQ(placement->query(m.addr(), kPage, kPage + 1).error().code, EINVAL);
  EXPECT_EQ(placement->query(m.addr(), 0, kPage).error().code, EINVAL);
  EXPECT_EQ(placement->move(m.addr(), m.length(), kPage, -1, false).error().code, EINVAL);
}

// Real migration needs a second memory node (the vm suite's guest has one).
TEST_F(NumaPlacement, MovesBetweenNodes) {
  if (topology_.nodes.size() < 2) GTEST_SKIP() << "host has one memory node; needs two";
  const int from = topology_.nodes[0].id;
  const int to = topology_.nodes[1].id;
  constexpr size_t kPages = 3000;  // more than one default batch
  SharedMemfd s = shared_memfd(kPages);
  auto placement = make_numa_page_placement();
  ASSERT_TRUE(placement->bind(s.map.addr(), s.map.length(), from).has_value());
  touch(s.map, 0, kPages);
  auto stats = placement->move(s.map.addr(), s.map.length(), kPage, to, false);
  ASSERT_TRUE(stats.has_value()) << stats.error().message;
  EXPECT_EQ(stats->pages_moved + stats->pages_failed, kPages);
  EXPECT_EQ(stats->pages_failed, 0u) << "first error " << stats->first_error;
  EXPECT_GT(stats->pages_moved, 0u);
  auto where = placement->query(s.map.addr(), s.map.length(), kPage);
  ASSERT_TRUE(where.has_value());
  size_t on_target = 0;
  for (int n : *where) on_target += n == to ? 1 : 0;
  EXPECT_EQ(on_target, stats->pages_moved);
}

}  // namespace
}  // namespace cxlpool::drivers
