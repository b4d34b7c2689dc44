// SPDX-License-Identifier: Apache-2.0
// The arena on the cuda backend: device pages at the driver's granularity,
// growth, in-place reuse, the limit with reclaim, trim; pages of pinned
// host-NUMA memory imported from POSIX descriptors (what a daemon tier
// gives). Skips where no GPU (or no cuda backend in this build) is available.
#include <gtest/gtest.h>

#include <cstdlib>

#include <utility>
#include <vector>

#include "backing.hpp"
#include "kv_arena_impl.hpp"
#if __has_include("cuda_vmm.hpp")
#include "cuda_vmm.hpp"
#define CXLPOOL_TEST_HAVE_CUDA_VMM 1
#endif

namespace cxlpool::client::arena {
namespace {

cxlpool_kv_arena_config cuda_config(uint64_t limit) {
  cxlpool_kv_arena_config c{};
  c.layers = 2;
  c.kv_heads = 8;
  c.head_dim = 128;
  c.dtype_bytes = 2;  // 2 KiB tokens: 1024 per 2 MiB page
  c.max_batch = 4;
  c.max_context = 4096;
  c.page_bytes = 2 << 20;
  c.backend = CXLPOOL_ARENA_BACKEND_CUDA;
  c.device = 0;
  c.tier_id = UINT32_MAX;  // device memory
  c.memory_limit_bytes = limit;
  c.async = 1;
  return c;
}

TEST(CudaKvArena, DevicePagesFollowTheRows) {
  const uint64_t group = 4ull * (2 << 20);  // one page in each of 4 tensors
  auto made = KvArena::create(nullptr, cuda_config(3 * group));
  if (!made) {
    // On a GPU host (tests/gpu/run.sh) a backend that does not come up is a failure.
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << made.error().message;
    GTEST_SKIP() << "no cuda arena here: " << made.error().message;
  }
  auto& a = **made;
  auto x = a.alloc_reqid();
  auto y = a.alloc_reqid();
  ASSERT_TRUE(x && y);
  std::vector<uint32_t> seq(4, 0);
  seq[*x] = 2048;  // 2 groups
  seq[*y] = 1;     // 1 group
  ASSERT_TRUE(a.step(seq));
  auto s = a.stats();
  EXPECT_EQ(s.mapped_bytes, 3 * group);
  EXPECT_EQ(s.backend, uint32_t{CXLPOOL_ARENA_BACKEND_CUDA});
  seq[*y] = 1025;
  EXPECT_EQ(a.step(seq).error().code, ENOMEM);
  ASSERT_TRUE(a.free_reqid(*x));
  seq[*x] = 0;
  ASSERT_TRUE(a.step_async(seq));
  ASSERT_TRUE(a.wait());
  s = a.stats();
  EXPECT_EQ(s.reuses, 4u);
  EXPECT_EQ(s.mapped_bytes, 3 * group);
  ASSERT_TRUE(a.free_reqid(*y));
  ASSERT_TRUE(a.trim(0));
  EXPECT_EQ(a.stats().mapped_bytes, 0u);
  EXPECT_EQ(a.stats().region_bytes, 0u);
}

// A tier id asks for the daemon's host memory: without a connection that is
// refused up front, never served from device memory instead.
TEST(CudaKvArena, ATierWithoutAClientIsRefused) {
  auto c = cuda_config(0);
  c.tier_id = 0;
  auto made = KvArena::create(nullptr, c);
  ASSERT_FALSE(made);
  EXPECT_EQ(made.error().code, EINVAL);
  EXPECT_NE(made.error().message.find("need a client connection"), std::string::npos) << made.error().message;
}

// The daemon's side of a tier's pages is cuda::export_host_numa; here it is
// called in-process so the import and mapping path runs without a daemon.
TEST(CudaKvArena, HostNumaPagesImportedFromDescriptors) {
#if CXLPOOL_TEST_HAVE_CUDA_VMM
  auto vmm = cuda::make_cuda_vmm(0);
  if (!vmm) {
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << vmm.error().message;
    GTEST_SKIP() << "no cuda device here: " << vmm.error().message;
  }
  if (auto probe = cuda::export_host_numa(0, 1, 0); !probe) {
    GTEST_SKIP() << "no host-NUMA VMM memory on this device: " << probe.error().message;
  }
  int exports = 0;
  auto source = make_gpu_host_backing(
      [&exports](uint64_t bytes) -> Result<GpuHostMemory> {
        auto e = cuda::export_host_numa(0, bytes, 0);
        if (!e) return tl::unexpected(e.error());
        ++exports;
        return GpuHostMemory{std::move(e->fd), e->bytes, 0};
      },
      0);
  EXPECT_EQ(source->tier(), 0u);
  const uint64_t group = 4ull * (2 << 20);
  auto c = cuda_config(2 * group);
  c.tier_id = 0;
  auto made = KvArena::create(nullptr, c, std::move(*vmm), std::move(source));
  ASSERT_TRUE(made) << made.error().message;
  auto& a = **made;
  auto x = a.alloc_reqid();
  ASSERT_TRUE(x);
  std::vector<uint32_t> seq(4, 0);
  seq[*x] = 1500;  // 2 groups
  ASSERT_TRUE(a.step(seq));
  EXPECT_EQ(a.stats().mapped_bytes, 2 * group);
  EXPECT_EQ(exports, 8);  // one descriptor per page
  seq[*x] = 2049;
  EXPECT_EQ(a.step(seq).error().code, ENOMEM);
  ASSERT_TRUE(a.free_reqid(*x));
  ASSERT_TRUE(a.trim(0));
  EXPECT_EQ(a.stats().mapped_bytes, 0u);
#else
  GTEST_SKIP() << "the cuda backend is not built";
#endif
}

}  // namespace
}  // namespace cxlpool::client::arena
