// SPDX-License-Identifier: Apache-2.0
// The arena on the cuda backend: device pages at the driver's granularity,
// growth, in-place reuse, the limit with reclaim, trim. Skips where no GPU
// (or no cuda backend in this build) is available.
#include <gtest/gtest.h>

#include <cstdlib>

#include <vector>

#include "kv_arena_impl.hpp"

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

}  // namespace
}  // namespace cxlpool::client::arena
