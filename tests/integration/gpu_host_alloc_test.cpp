// SPDX-License-Identifier: Apache-2.0
// GpuHostAlloc against the real cxlpoold: tiers that cannot hold host-NUMA
// memory and oversized requests are refused with their reason; on a node
// tier the daemon either hands out an exported allocation (a host with a GPU)
// or says why it cannot (ENODEV: no driver or GPU; ENOTSUP: built without
// CUDA or a device without host-NUMA VMM). The counters follow every call.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

Result<proto::Received> ask(Connection& conn, uint32_t tier, uint64_t bytes) {
  return conn.call(proto::GpuHostAlloc{.tier_id = tier, .device = 0, .bytes = bytes});
}

// A tier backed by a NUMA node of its own (not the emulated one), if any.
std::optional<proto::TierInfo> tier_with_a_node(Connection& conn) {
  for (const auto& t : list_tiers(conn))
    if (t.numa_node >= 0 && t.name != kEmuTier) return t;
  return std::nullopt;
}

TEST(GpuHostAlloc, TiersWithoutANodeAndOversizedRequestsAreRefused) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  auto conn = connect_admin(daemon.socket(), "gpu-host");
  ASSERT_TRUE(conn);
  uint32_t unknown = 0;
  for (const auto& t : list_tiers(*conn)) unknown = std::max(unknown, t.id + 1);
  const auto emu = tier_named(*conn, kEmuTier);

  auto r = ask(*conn, unknown, 2 * kMiB);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("no tier " + std::to_string(unknown)), std::string::npos) << r.error().message;

  r = ask(*conn, emu.id, 2 * kMiB);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  EXPECT_NE(r.error().message.find("has no NUMA node of its own"), std::string::npos) << r.error().message;

  EXPECT_EQ(stat(*conn, "gpu.host_alloc_failures"), 2u);
  EXPECT_EQ(stat(*conn, "gpu.host_allocs"), 0u);
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_bytes"), 0u);

  const auto node_tier = tier_with_a_node(*conn);
  if (!node_tier) GTEST_SKIP() << "no tier with a NUMA node of its own here";
  // Above the default max_region_size (64 GiB), refused before any driver call.
  r = ask(*conn, node_tier->id, 65ull << 30);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, E2BIG) << r.error().message;
  // The session survives every refusal.
  EXPECT_TRUE(conn->call(proto::StatusRequest{}));
}

TEST(GpuHostAlloc, ANodeTierAnswersWithMemoryOrTheReasonThereIsNone) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start());
  auto conn = connect_admin(daemon.socket(), "gpu-host");
  ASSERT_TRUE(conn);
  const auto node_tier = tier_with_a_node(*conn);
  if (!node_tier) GTEST_SKIP() << "no tier with a NUMA node of its own here";

  const uint64_t asked = 3 * kMiB + 4096;  // any size: the driver rounds it up
  auto r = ask(*conn, node_tier->id, asked);
  if (!r) {
    EXPECT_TRUE(r.error().code == ENODEV || r.error().code == ENOTSUP) << r.error().message;
    if (r.error().code == ENODEV) {
      EXPECT_NE(r.error().message.find("no usable GPU: "), std::string::npos) << r.error().message;
    } else {
      EXPECT_NE(r.error().message.find("no GpuVmm backend here can export host memory"), std::string::npos)
          << r.error().message;
    }
    EXPECT_EQ(stat(*conn, "gpu.host_alloc_failures"), 1u);
    EXPECT_EQ(stat(*conn, "gpu.host_allocs"), 0u);
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << "GPU host: " << r.error().message;
    return;
  }
  const auto* reply = std::get_if<proto::GpuHostAllocReply>(&r->envelope.message);
  ASSERT_NE(reply, nullptr);
  ASSERT_EQ(r->fds.size(), 1u);
  EXPECT_GE(::fcntl(r->fds[0].get(), F_GETFD), 0);
  EXPECT_GE(reply->bytes, asked);
  EXPECT_EQ(reply->numa_node, static_cast<uint32_t>(node_tier->numa_node));
  EXPECT_EQ(stat(*conn, "gpu.host_allocs"), 1u);
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_bytes"), reply->bytes);
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_failures"), 0u);
}

TEST(GpuHostAlloc, OneUidsSessionsAreChargedUpToTheLimit) {
  DaemonProcess daemon(TestConfig{.tables = "[pool]\ngpu_host_bytes_per_uid = \"4M\"\n"}.render());
  ASSERT_TRUE(daemon.start());
  auto conn = connect_admin(daemon.socket(), "gpu-host");
  ASSERT_TRUE(conn);
  const auto node_tier = tier_with_a_node(*conn);
  if (!node_tier) GTEST_SKIP() << "no tier with a NUMA node of its own here";

  // Over the limit: refused before the driver is asked, GPU or not.
  auto r = ask(*conn, node_tier->id, 5 * kMiB);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EDQUOT) << r.error().message;
  EXPECT_NE(r.error().message.find("gpu_host_bytes_per_uid 4194304"), std::string::npos) << r.error().message;
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_quota_rejections"), 1u);
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_charged_bytes"), 0u);

  r = ask(*conn, node_tier->id, 3 * kMiB);
  if (!r) {
    EXPECT_TRUE(r.error().code == ENODEV || r.error().code == ENOTSUP) << r.error().message;
    EXPECT_EQ(stat(*conn, "gpu.host_alloc_charged_bytes"), 0u) << "a failed allocation charges nothing";
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << "GPU host: " << r.error().message;
    return;
  }
  const auto* reply = std::get_if<proto::GpuHostAllocReply>(&r->envelope.message);
  ASSERT_NE(reply, nullptr);
  EXPECT_EQ(stat(*conn, "gpu.host_alloc_charged_bytes"), reply->bytes);
  // A second session of the same uid shares the limit.
  auto other = connect_admin(daemon.socket(), "gpu-host-2");
  ASSERT_TRUE(other);
  auto more = ask(*other, node_tier->id, 2 * kMiB);
  ASSERT_FALSE(more);
  EXPECT_EQ(more.error().code, EDQUOT) << more.error().message;
  // The charge ends with the session that asked.
  conn.reset();
  ASSERT_TRUE(wait_until([&] { return stat(*other, "gpu.host_alloc_charged_bytes") == 0; }, std::chrono::seconds(2)));
  EXPECT_TRUE(ask(*other, node_tier->id, 2 * kMiB));
}

}  // namespace
}  // namespace cxlpool::integration
