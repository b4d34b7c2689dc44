// SPDX-License-Identifier: Apache-2.0
// The decode-attention kernels against the CPU reference: contiguous and
// paged layouts, f32 and bf16 caches, grouped-query heads, empty rows,
// head dims that do not fill a warp, and out-of-pool block-table entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "attention_math.hpp"
#include "decode_attention_ref.hpp"
#include "random_data.hpp"
#include "support/gpu_test_env.hpp"

namespace cxlpool::cuda::test {
namespace {

using ref::AttentionShape;
using ref::KvDtype;

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span<const T>(v));
}

// K/V bytes of `elems` values in `dtype`, random in [-1, 1].
std::vector<std::byte> random_cache(size_t elems, KvDtype dtype, uint32_t seed) {
  const std::vector<float> values = random_floats(elems, seed);
  std::vector<std::byte> out(elems * ref::dtype_bytes(dtype));
  for (size_t i = 0; i < elems; ++i) {
    const float f = values[i];
    if (dtype == KvDtype::kF32) {
      std::memcpy(out.data() + 4 * i, &f, 4);
    } else {
      const uint16_t b = math::f32_to_bf16(f);
      std::memcpy(out.data() + 2 * i, &b, 2);
    }
  }
  return out;
}

std::vector<float> random_q(size_t n, uint32_t seed) { return random_floats(n, seed, 2.0f); }

std::vector<float> as_floats(const std::vector<std::byte>& b) {
  std::vector<float> out(b.size() / sizeof(float));
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-5f + 2e-5f * std::fabs(want[i])) << "element " << i;
  }
}

struct Case {
  AttentionShape shape;
  uint64_t stride;
  std::vector<uint32_t> lens;
};

std::vector<Case> cases() {
  return {
      {{4, 8, 2, 32, 1.0f / std::sqrt(32.0f), KvDtype::kF32}, 300, {300, 1, 0, 129}},
      {{3, 8, 8, 128, 1.0f / std::sqrt(128.0f), KvDtype::kF32}, 64, {64, 33, 5}},
      {{2, 32, 8, 128, 1.0f / std::sqrt(128.0f), KvDtype::kBf16}, 1000, {1000, 777}},
      {{2, 4, 1, 40, 0.3f, KvDtype::kBf16}, 17, {17, 3}},
      {{1, 2, 2, 256, 1.0f / 16.0f, KvDtype::kF32}, 70, {70}},
      // Long rows: the context is split over many blocks and reduced. Eight
      // query heads per KV head take two blocks' worth of heads.
      {{2, 16, 2, 128, 1.0f / std::sqrt(128.0f), KvDtype::kBf16}, 4096, {4096, 2500}},
      {{3, 8, 4, 64, 0.125f, KvDtype::kF32}, 3000, {3000, 1, 1777}},
      // Head rows of 6 or 30 bytes: no 16-byte loads, scalar ones.
      {{2, 3, 1, 15, 0.25f, KvDtype::kBf16}, 900, {900, 450}},
      {{1, 6, 3, 3, 0.5f, KvDtype::kF32}, 2000, {1999}},
  };
}

class GpuAttention : public GpuTest {
 protected:
  // Runs both kernels on `c` and compares them with the contiguous reference.
  void run_case(const Case& c, uint32_t page_tokens) {
    const AttentionShape& s = c.shape;
    const size_t cache_elems = size_t{s.batch} * c.stride * s.kv_heads * s.head_dim;
    const auto k = random_cache(cache_elems, s.dtype, 1);
    const auto v = random_cache(cache_elems, s.dtype, 2);
    const auto q = random_q(size_t{s.batch} * s.q_heads * s.head_dim, 3);
    const size_t out_elems = q.size();
    std::vector<float> want(out_elems);
    ASSERT_EQ(ref::decode_attention(s, q.data(), ref::ContiguousKv{k.data(), v.data(), c.stride},
                                    c.lens.data(), want.data()),
              0);

    CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(q)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dk, upload(k));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dv, upload(v));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(c.lens)));
    // NaN-filled outputs: an element the kernel leaves unwritten fails.
    const std::vector<float> poison(out_elems, std::nanf(""));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, upload(bytes_of(poison)));
    CXLPOOL_ASSERT_OK(kernels_->decode_attention(s, dq.ptr(), dk.ptr(), dv.ptr(), c.stride,
                                                 dlens.ptr(), dout.ptr()));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), out_elems * sizeof(float)));
    expect_close(as_floats(got), want);

    // The same cache scattered over a shuffled pool of pages.
    const uint32_t blocks_per_row = uint32_t((c.stride + page_tokens - 1) / page_tokens);
    const uint64_t pool_pages = uint64_t{s.batch} * blocks_per_row + 5;
    std::vector<uint32_t> table(pool_pages);
    std::iota(table.begin(), table.end(), 0u);
    std::shuffle(table.begin(), table.end(), std::mt19937(7));
    table.resize(size_t{s.batch} * blocks_per_row);
    const size_t pool_bytes = pool_pages * page_tokens * ref::token_bytes(s);
    std::vector<std::byte> kp(pool_bytes), vp(pool_bytes);
    ASSERT_EQ(ref::copy_to_pages(s, k.data(), c.stride, c.lens.data(), kp.data(), pool_pages,
                                 page_tokens, table.data(), blocks_per_row),
              0);
    ASSERT_EQ(ref::copy_to_pages(s, v.data(), c.stride, c.lens.data(), vp.data(), pool_pages,
                                 page_tokens, table.data(), blocks_per_row),
              0);
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dkp, upload(kp));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dvp, upload(vp));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dtable, upload(bytes_of(table)));
    const std::vector<uint32_t> zero{0};
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dskipped, upload(bytes_of(zero)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dpaged, upload(bytes_of(poison)));
    CXLPOOL_ASSERT_OK(kernels_->decode_attention_paged(
        s, dq.ptr(), dkp.ptr(), dvp.ptr(), pool_pages, page_tokens, dtable.ptr(), blocks_per_row,
        dlens.ptr(), dpaged.ptr(), dskipped.ptr()));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(paged, download(dpaged.ptr(), out_elems * sizeof(float)));
    expect_close(as_floats(paged), want);
    CXLPOOL_ASSERT_OK_AND_ASSIGN(skipped, download(dskipped.ptr(), sizeof(uint32_t)));
    EXPECT_EQ(as_floats(skipped).size(), 1u);
    uint32_t skipped_count = 0;
    std::memcpy(&skipped_count, skipped.data(), sizeof(skipped_count));
    EXPECT_EQ(skipped_count, 0u);
  }
};

TEST_F(GpuAttention, ContiguousAndPagedMatchReference) {
  for (const Case& c : cases()) {
    for (const uint32_t page_tokens : {1u, 16u, 100u}) {
      SCOPED_TRACE(testing::Message() << "head_dim " << c.shape.head_dim << " q_heads "
                                      << c.shape.q_heads << " kv_heads " << c.shape.kv_heads
                                      << " bf16 " << (c.shape.dtype == KvDtype::kBf16)
                                      << " page_tokens " << page_tokens);
      run_case(c, page_tokens);
      if (HasFatalFailure()) return;
    }
  }
}

// The same inputs cut into 1 split and into many: the results agree with the
// reference whatever the launch geometry.
TEST_F(GpuAttention, EverySplitCountMatchesReference) {
  const Case c{{2, 8, 2, 128, 1.0f / std::sqrt(128.0f), KvDtype::kF32}, 8192, {8192, 1300}};
  // Both planners: slices of one length, and each row cut evenly.
  for (const bool equal : {true, false}) {
    kernels_->set_attention_equal_slices(equal);
    for (const uint32_t per_sm : {1u, 3u, Kernels::kMaxBlocksPerSm}) {
      CXLPOOL_ASSERT_OK(kernels_->set_attention_blocks_per_sm(per_sm));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(plan, kernels_->attention_plan(c.shape, c.stride, 0, 0));
      SCOPED_TRACE(testing::Message() << per_sm << " blocks per SM: " << plan.n_splits << " splits of "
                                      << plan.split_len << " tokens");
      EXPECT_TRUE(plan.vector_loads);
      EXPECT_EQ(plan.split_len == 0, !equal);
      run_case(c, 16);
      if (HasFatalFailure()) return;
    }
  }
  kernels_->set_attention_equal_slices(false);
  EXPECT_FALSE(kernels_->set_attention_blocks_per_sm(0));
  EXPECT_FALSE(kernels_->set_attention_blocks_per_sm(Kernels::kMaxBlocksPerSm + 1));
}

TEST_F(GpuAttention, PlanSplitsLongContextsAndKeepsShortOnesWhole) {
  const AttentionShape s{1, 32, 8, 128, 0.1f, KvDtype::kBf16};
  CXLPOOL_ASSERT_OK_AND_ASSIGN(long_plan, kernels_->attention_plan(s, 32768, 0, 0));
  EXPECT_GT(long_plan.n_splits, 1u);
  EXPECT_EQ(long_plan.split_len, 0u);  // the default: each row cut evenly
  // Slices of one length: whole warp steps, just covering the longest row.
  kernels_->set_attention_equal_slices(true);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(equal_plan, kernels_->attention_plan(s, 32768, 0, 0));
  kernels_->set_attention_equal_slices(false);
  EXPECT_EQ(equal_plan.split_len % 32, 0u);
  EXPECT_GE(uint64_t{equal_plan.n_splits} * equal_plan.split_len, 32768u);
  EXPECT_LT(uint64_t{equal_plan.n_splits - 1} * equal_plan.split_len, 32768u);
  EXPECT_TRUE(long_plan.vector_loads);
  EXPECT_EQ(long_plan.token_lanes, 16u);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(short_plan, kernels_->attention_plan(s, 16, 0, 0));
  EXPECT_EQ(short_plan.n_splits, 1u);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(misaligned, kernels_->attention_plan(s, 16, 8, 0));
  EXPECT_FALSE(misaligned.vector_loads);
  // A batch that fills the GPU on its own needs no split.
  const AttentionShape wide{4096, 32, 8, 128, 0.1f, KvDtype::kBf16};
  CXLPOOL_ASSERT_OK_AND_ASSIGN(wide_plan, kernels_->attention_plan(wide, 32768, 0, 0));
  EXPECT_EQ(wide_plan.n_splits, 1u);
}

TEST_F(GpuAttention, PagesOutsideThePoolAreSkippedAndCounted) {
  const AttentionShape s{1, 2, 1, 32, 0.2f, KvDtype::kF32};
  const uint32_t page_tokens = 4;
  const std::vector<uint32_t> lens{8};
  // Page 0 holds tokens 0..3, the second entry points past a 1-page pool.
  const std::vector<uint32_t> table{0, 1};
  const auto kp = random_cache(4 * 32, KvDtype::kF32, 4);
  const auto vp = random_cache(4 * 32, KvDtype::kF32, 5);
  const auto q = random_q(2 * 32, 6);
  // What is left: attention over the 4 tokens of page 0.
  const std::vector<uint32_t> four{4};
  std::vector<float> want(64);
  ASSERT_EQ(ref::decode_attention(s, q.data(), ref::ContiguousKv{kp.data(), vp.data(), 4},
                                  four.data(), want.data()),
            0);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(q)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dk, upload(kp));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dv, upload(vp));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(lens)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dtable, upload(bytes_of(table)));
  const std::vector<uint32_t> zero{0};
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dskipped, upload(bytes_of(zero)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, DeviceBuffer::allocate(*ctx_, 64 * sizeof(float)));
  CXLPOOL_ASSERT_OK(kernels_->decode_attention_paged(s, dq.ptr(), dk.ptr(), dv.ptr(), 1,
                                                     page_tokens, dtable.ptr(), 2, dlens.ptr(),
                                                     dout.ptr(), dskipped.ptr()));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), 64 * sizeof(float)));
  expect_close(as_floats(got), want);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(skipped, download(dskipped.ptr(), sizeof(uint32_t)));
  uint32_t count = 0;
  std::memcpy(&count, skipped.data(), sizeof(count));
  EXPECT_EQ(count, 2u * 4u);  // 4 tokens, once per query head
}

// Head size 128: the 16-lane kernels, which look the block table up a step
// ahead, one token per lane. Rows whose last pages point outside the pool
// attend over the pages before them, and every skipped token is counted once
// per query head; long rows (several splits) and short ones (one or two).
TEST_F(GpuAttention, PagesLookedUpAheadOutsideThePoolAreSkippedAndCounted) {
  struct Rows {
    uint32_t blocks_per_row;
    std::vector<uint32_t> lens;
    std::vector<uint32_t> kept;  // tokens on the pages left inside the pool
  };
  const Rows rows_cases[] = {{20, {300, 100}, {192, 80}}, {8, {120, 40}, {64, 16}}};
  for (const KvDtype dtype : {KvDtype::kF32, KvDtype::kBf16}) {
    for (const Rows& rows : rows_cases) {
      const AttentionShape s{2, 8, 2, 128, 0.09f, dtype};
      const uint32_t page_tokens = 16;
      const uint32_t blocks_per_row = rows.blocks_per_row;
      const uint64_t stride = uint64_t{blocks_per_row} * page_tokens;
      const std::vector<uint32_t>& lens = rows.lens;
      const std::vector<uint32_t>& kept = rows.kept;
      CXLPOOL_ASSERT_OK_AND_ASSIGN(plan, kernels_->attention_plan(s, stride, 0, 0));
      SCOPED_TRACE(testing::Message() << "bf16 " << (dtype == KvDtype::kBf16) << ", "
                                      << blocks_per_row << " pages per row, " << plan.n_splits
                                      << " splits");
      const size_t cache_elems = size_t{s.batch} * stride * s.kv_heads * s.head_dim;
      const auto k = random_cache(cache_elems, dtype, 11);
      const auto v = random_cache(cache_elems, dtype, 12);
      const auto q = random_q(size_t{s.batch} * s.q_heads * s.head_dim, 13);
      std::vector<float> want(q.size());
      ASSERT_EQ(ref::decode_attention(s, q.data(), ref::ContiguousKv{k.data(), v.data(), stride},
                                      kept.data(), want.data()),
                0);
      const uint64_t pool_pages = uint64_t{s.batch} * blocks_per_row;
      std::vector<uint32_t> table(pool_pages);
      std::iota(table.begin(), table.end(), 0u);
      std::shuffle(table.begin(), table.end(), std::mt19937(3));
      const size_t pool_bytes = pool_pages * page_tokens * ref::token_bytes(s);
      std::vector<std::byte> kp(pool_bytes), vp(pool_bytes);
      ASSERT_EQ(ref::copy_to_pages(s, k.data(), stride, lens.data(), kp.data(), pool_pages,
                                   page_tokens, table.data(), blocks_per_row),
                0);
      ASSERT_EQ(ref::copy_to_pages(s, v.data(), stride, lens.data(), vp.data(), pool_pages,
                                   page_tokens, table.data(), blocks_per_row),
                0);
      for (uint32_t r = 0; r < s.batch; ++r) {
        for (uint32_t b = kept[r] / page_tokens; b < blocks_per_row; ++b) {
          table[size_t{r} * blocks_per_row + b] = uint32_t(pool_pages + b);
        }
      }
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(q)));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dkp, upload(kp));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dvp, upload(vp));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(lens)));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dtable, upload(bytes_of(table)));
      const std::vector<uint32_t> zero{0};
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dskipped, upload(bytes_of(zero)));
      const std::vector<float> poison(q.size(), std::nanf(""));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, upload(bytes_of(poison)));
      CXLPOOL_ASSERT_OK(kernels_->decode_attention_paged(
          s, dq.ptr(), dkp.ptr(), dvp.ptr(), pool_pages, page_tokens, dtable.ptr(),
          blocks_per_row, dlens.ptr(), dout.ptr(), dskipped.ptr()));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), q.size() * sizeof(float)));
      expect_close(as_floats(got), want);
      CXLPOOL_ASSERT_OK_AND_ASSIGN(skipped, download(dskipped.ptr(), sizeof(uint32_t)));
      uint32_t count = 0;
      std::memcpy(&count, skipped.data(), sizeof(count));
      EXPECT_EQ(count, ((lens[0] - kept[0]) + (lens[1] - kept[1])) * s.q_heads);
    }
  }
}

// A pool stated as 2^32 tokens or more does not fit the 16-lane kernels'
// 32-bit pool indices: the launcher takes the kernels with 64-bit offsets,
// which give the same result.
TEST_F(GpuAttention, PoolOfFourBillionTokensStillMatchesReference) {
  const AttentionShape s{2, 8, 2, 128, 0.09f, KvDtype::kBf16};
  const uint32_t page_tokens = 16;
  const uint32_t blocks_per_row = 8;
  const uint64_t stride = uint64_t{blocks_per_row} * page_tokens;
  const std::vector<uint32_t> lens{128, 77};
  const size_t cache_elems = size_t{s.batch} * stride * s.kv_heads * s.head_dim;
  const auto k = random_cache(cache_elems, s.dtype, 21);
  const auto v = random_cache(cache_elems, s.dtype, 22);
  const auto q = random_q(size_t{s.batch} * s.q_heads * s.head_dim, 23);
  std::vector<float> want(q.size());
  ASSERT_EQ(ref::decode_attention(s, q.data(), ref::ContiguousKv{k.data(), v.data(), stride},
                                  lens.data(), want.data()),
            0);
  const uint64_t real_pages = uint64_t{s.batch} * blocks_per_row;
  std::vector<uint32_t> table(real_pages);
  std::iota(table.begin(), table.end(), 0u);
  std::shuffle(table.begin(), table.end(), std::mt19937(5));
  const size_t pool_bytes = real_pages * page_tokens * ref::token_bytes(s);
  std::vector<std::byte> kp(pool_bytes), vp(pool_bytes);
  ASSERT_EQ(ref::copy_to_pages(s, k.data(), stride, lens.data(), kp.data(), real_pages,
                               page_tokens, table.data(), blocks_per_row),
            0);
  ASSERT_EQ(ref::copy_to_pages(s, v.data(), stride, lens.data(), vp.data(), real_pages,
                               page_tokens, table.data(), blocks_per_row),
            0);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(q)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dkp, upload(kp));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dvp, upload(vp));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(lens)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dtable, upload(bytes_of(table)));
  const std::vector<float> poison(q.size(), std::nanf(""));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, upload(bytes_of(poison)));
  // Only the first real_pages pages are ever read; the stated size decides
  // which kernel runs.
  const uint64_t stated_pages = (uint64_t{1} << 32) / page_tokens;
  CXLPOOL_ASSERT_OK(kernels_->decode_attention_paged(s, dq.ptr(), dkp.ptr(), dvp.ptr(),
                                                     stated_pages, page_tokens, dtable.ptr(),
                                                     blocks_per_row, dlens.ptr(), dout.ptr()));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), q.size() * sizeof(float)));
  expect_close(as_floats(got), want);
}

TEST_F(GpuAttention, BadShapesAreRejectedBeforeLaunch) {
  const AttentionShape bad{1, 3, 2, 32, 1.0f, KvDtype::kF32};
  auto r = kernels_->decode_attention(bad, 0, 0, 0, 1, 0, 0);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EINVAL);
  const AttentionShape wide{1, 1, 1, ref::kMaxHeadDim + 1, 1.0f, KvDtype::kF32};
  EXPECT_FALSE(kernels_->decode_attention_paged(wide, 0, 0, 0, 1, 1, 0, 1, 0, 0));
}

}  // namespace
}  // namespace cxlpool::cuda::test
