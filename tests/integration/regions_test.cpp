// SPDX-License-Identifier: Apache-2.0
// Regions between real processes: sharing a named region, reclaiming a dead
// client's lease, exact accounting, and the bounds of what a client may do
// with a region's descriptor.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/cxlpool.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "running_pool.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSharedSize = 1 * kMiB;
constexpr size_t kAnswerOffset = 512 * 1024;

unsigned char pattern_byte(size_t i) { return static_cast<unsigned char>((i * 31 + 7) & 0xff); }

TEST(Regions, TwoProcessesShareANamedRegion) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());

  Client parent(pool.daemon.socket(), "share-parent");
  cxlpool::Region region = parent.create_named("shared-test", pool.emu, kSharedSize, 0644);
  ASSERT_TRUE(region.writable());
  ASSERT_EQ(region.size(), kSharedSize);
  auto* mem = region.data<unsigned char>();
  for (size_t i = 0; i < kAnswerOffset; ++i) mem[i] = pattern_byte(i);
  const uint64_t region_id = region.id();
  const std::string socket = pool.daemon.socket();
  const std::string answer = "answer for region " + std::to_string(region_id);

  const std::string failures = run_checks_in_child([&](ChildChecks& c) {
    // A connection of the child's own: the parent's is never used here.
    cxlpool_client* client = nullptr;
    int rc = cxlpool_connect(socket.c_str(), "share-child", &client);
    CHILD_EXPECT_EQ(c, rc, 0);
    if (rc != 0) return;
    cxlpool_region* r = nullptr;
    rc = cxlpool_named_open(client, "shared-test", CXLPOOL_OPEN_WRITABLE, &r);
    CHILD_EXPECT_EQ(c, rc, 0);
    if (rc != 0) return;
    CHILD_EXPECT_EQ(c, cxlpool_region_writable(r), 1);
    CHILD_EXPECT_EQ(c, cxlpool_region_id(r), region_id);
    CHILD_EXPECT_EQ(c, cxlpool_region_size(r), kSharedSize);
    void* addr = nullptr;
    CHILD_EXPECT_EQ(c, cxlpool_region_map(r, &addr), 0);
    if (addr == nullptr) return;
    auto* bytes = static_cast<unsigned char*>(addr);
    size_t mismatches = 0;
    for (size_t i = 0; i < kAnswerOffset; ++i) mismatches += bytes[i] != pattern_byte(i);
    CHILD_EXPECT_EQ(c, mismatches, 0u);
    std::memcpy(bytes + kAnswerOffset, answer.c_str(), answer.size() + 1);
    CHILD_EXPECT_EQ(c, cxlpool_region_free(r), 0);
    cxlpool_disconnect(client);
  });
  EXPECT_EQ(failures, "");
  EXPECT_STREQ(reinterpret_cast<const char*>(mem + kAnswerOffset), answer.c_str());

  // The child's handle went with its free; the parent's remains.
  auto regions = list_regions(*pool.admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].name, "shared-test");
  EXPECT_EQ(regions[0].kind, proto::RegionKind::kNamed);
  EXPECT_EQ(regions[0].handles, 1u);
  EXPECT_EQ(regions[0].mode, 0644u);

  // Read-only: the descriptor itself refuses a writable shared mapping.
  cxlpool::Region ro = parent.open_named("shared-test", false);
  EXPECT_EQ(cxlpool_region_writable(ro.get()), 0);
  errno = 0;
  void* w = ::mmap(nullptr, kSharedSize, PROT_READ | PROT_WRITE, MAP_SHARED, ro.fd(), 0);
  EXPECT_EQ(w, MAP_FAILED);
  EXPECT_EQ(errno, EACCES);
  if (w != MAP_FAILED) ::munmap(w, kSharedSize);
  auto* ro_mem = ro.data<const char>();
  EXPECT_STREQ(ro_mem + kAnswerOffset, answer.c_str());
  EXPECT_NE(::mprotect(const_cast<char*>(ro_mem), 4096, PROT_READ | PROT_WRITE), 0);
  EXPECT_EQ(errno, EACCES);

  parent.unlink_named("shared-test");
  ro.free();
  region.free();
  EXPECT_TRUE(list_regions(*pool.admin).empty());
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 0u);
}

TEST(Regions, LeasedRegionReclaimedWithinASecondOfKill9) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());
  const uint64_t baseline = tier_used(*pool.admin, kEmuTier);
  ASSERT_EQ(baseline, 0u);
  const std::string socket = pool.daemon.socket();

  ForkedChild child([&](int report) -> int {
    cxlpool_client* client = nullptr;
    cxlpool_region* region = nullptr;
    int rc = cxlpool_connect(socket.c_str(), "doomed", &client);
    if (rc == 0) rc = cxlpool_region_alloc(client, pool.emu, 64 * kMiB, CXLPOOL_ALLOC_POPULATE, &region);
    const std::string line = rc == 0 ? "region " + std::to_string(cxlpool_region_id(region)) + "\n"
                                     : "error " + std::to_string(rc) + " " + cxlpool_last_error() + "\n";
    (void)!::write(report, line.data(), line.size());
    for (;;) ::pause();
  });
  const auto line = child.read_line(10s);
  ASSERT_TRUE(line.has_value()) << "the child reported nothing";
  ASSERT_EQ(line->rfind("region ", 0), 0u) << *line;
  const uint64_t id = std::stoull(line->substr(7));

  auto regions = list_regions(*pool.admin);
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[0].id, id);
  EXPECT_EQ(regions[0].kind, proto::RegionKind::kLeased);
  EXPECT_EQ(regions[0].size, 64 * kMiB);
  EXPECT_EQ(regions[0].resident_bytes, 64 * kMiB) << "POPULATE must fault in every page";
  EXPECT_NE(regions[0].client_id, 0u);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), baseline + 64 * kMiB);

  const auto killed = std::chrono::steady_clock::now();
  child.kill(SIGKILL);
  const bool reclaimed = wait_until(
      [&] { return list_regions(*pool.admin).empty() && tier_used(*pool.admin, kEmuTier) == baseline; }, 3s);
  const auto elapsed = std::chrono::steady_clock::now() - killed;
  EXPECT_TRUE(reclaimed);
  EXPECT_LT(elapsed, 1s) << "reclaimed after "
                         << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms";
  EXPECT_EQ(child.wait(5s), 128 + SIGKILL);
  EXPECT_EQ(stat(*pool.admin, "pool.allocated_bytes"), 0u);
}

TEST(Regions, SizesRoundUpToPagesAndAccountingIsExact) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());

  Client client(pool.daemon.socket(), "accounting");
  const uint64_t asked[] = {1, 4095, 4097, 5000};
  const uint64_t rounded[] = {4096, 4096, 8192, 8192};
  std::vector<cxlpool::Region> regions;
  uint64_t sum = 0;
  for (size_t i = 0; i < 4; ++i) {
    regions.push_back(client.alloc(pool.emu, asked[i]));
    EXPECT_EQ(regions.back().size(), rounded[i]) << "asked for " << asked[i];
    EXPECT_EQ(regions.back().page_size(), 4096u);
    EXPECT_EQ(regions.back().tier(), pool.emu);
    sum += rounded[i];
  }
  ASSERT_EQ(sum, 24576u);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), sum);
  EXPECT_EQ(tier_used(*pool.admin, "dram0"), 0u);
  EXPECT_EQ(stat(*pool.admin, "pool.allocated_bytes"), sum);
  EXPECT_EQ(stat(*pool.admin, "tier.emu.used_bytes"), sum);
  EXPECT_EQ(stat(*pool.admin, "pool.regions"), 4u);
  auto status = pool.admin->call_for<proto::StatusReply>(proto::StatusRequest{});
  ASSERT_TRUE(status);
  EXPECT_EQ(status->bytes_allocated, sum);
  EXPECT_EQ(status->regions, 4u);
  uint64_t listed = 0;
  for (const auto& r : list_regions(*pool.admin)) listed += r.size;
  EXPECT_EQ(listed, sum);

  for (auto& r : regions) r.free();
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 0u);
  EXPECT_EQ(stat(*pool.admin, "pool.allocated_bytes"), 0u);
  EXPECT_EQ(stat(*pool.admin, "pool.regions_created"), 4u);
  EXPECT_EQ(stat(*pool.admin, "pool.regions_destroyed"), 4u);
  EXPECT_TRUE(list_regions(*pool.admin).empty());
}

// A writable descriptor must not let a client grow a region past what the
// pool charged for it (or shrink it under the daemon's mapping).
TEST(Regions, ClientCannotResizeRegionMemory) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());
  Client client(pool.daemon.socket(), "resizer");
  cxlpool::Region region = client.alloc(pool.emu, 1 * kMiB);
  ASSERT_TRUE(region.writable());

  errno = 0;
  EXPECT_NE(::ftruncate(region.fd(), 64 * kMiB), 0);
  EXPECT_EQ(errno, EPERM);
  errno = 0;
  EXPECT_NE(::ftruncate(region.fd(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  errno = 0;
  EXPECT_NE(::fallocate(region.fd(), 0, 0, 64 * kMiB), 0);
  EXPECT_EQ(errno, EPERM);
  struct stat st {};
  ASSERT_EQ(::fstat(region.fd(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 1 * kMiB);
  // Nor may it add seals of its own: F_SEAL_FUTURE_WRITE would stop every
  // later client from mapping the region writable.
  errno = 0;
  EXPECT_NE(::fcntl(region.fd(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE), 0);
  EXPECT_EQ(errno, EPERM);
}

}  // namespace
}  // namespace cxlpool::integration
