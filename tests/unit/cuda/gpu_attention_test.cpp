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

// Random K/V caches of `stride` tokens a row (seeds `seed`, `seed` + 1),
// random queries (`seed` + 2), and the contiguous reference over the first
// `ref_lens[r]` tokens of each row r.
struct Inputs {
  std::vector<std::byte> k, v;
  std::vector<float> q, want;
};

void random_inputs(const AttentionShape& s, uint64_t stride, const std::vector<uint32_t>& ref_lens,
                   uint32_t seed, Inputs& in) {
  const size_t cache_elems = size_t{s.batch} * stride * s.kv_heads * s.head_dim;
  in.k = random_cache(cache_elems, s.dtype, seed);
  in.v = random_cache(cache_elems, s.dtype, seed + 1);
  in.q = random_q(size_t{s.batch} * s.q_heads * s.head_dim, seed + 2);
  in.want.assign(in.q.size(), 0.0f);
  ASSERT_EQ(ref::decode_attention(s, in.q.data(),
                                  ref::ContiguousKv{in.k.data(), in.v.data(), stride},
                                  ref_lens.data(), in.want.data()),
            0);
}

// A paged K/V cache: pools of `pool_pages` pages of `page_tokens` tokens and
// a block table of `blocks_per_row` entries a row.
struct Pages {
  uint64_t pool_pages;
  uint32_t page_tokens;
  uint32_t blocks_per_row;
  std::vector<uint32_t> table;
  std::vector<std::byte> k, v;
};

// Fills `pages` (its sizes set) with the first `lens[r]` tokens of each row r
// of `in`, rows getting pool pages in an order shuffled with `shuffle_seed`.
void scatter_to_pages(const AttentionShape& s, const Inputs& in, uint64_t stride,
                      const std::vector<uint32_t>& lens, uint32_t shuffle_seed, Pages& pages) {
  pages.table.resize(pages.pool_pages);
  std::iota(pages.table.begin(), pages.table.end(), 0u);
  std::shuffle(pages.table.begin(), pages.table.end(), std::mt19937(shuffle_seed));
  pages.table.resize(size_t{s.batch} * pages.blocks_per_row);
  const size_t pool_bytes = pages.pool_pages * pages.page_tokens * ref::token_bytes(s);
  pages.k.assign(pool_bytes, std::byte{0});
  pages.v.assign(pool_bytes, std::byte{0});
  ASSERT_EQ(ref::copy_to_pages(s, in.k.data(), stride, lens.data(), pages.k.data(),
                               pages.pool_pages, pages.page_tokens, pages.table.data(),
                               pages.blocks_per_row),
            0);
  ASSERT_EQ(ref::copy_to_pages(s, in.v.data(), stride, lens.data(), pages.v.data(),
                               pages.pool_pages, pages.page_tokens, pages.table.data(),
                               pages.blocks_per_row),
            0);
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
      // 16 lanes a token with head rows that leave some lanes idle (the
      // staged kernels copy 12 and 18 of 16-byte chunks a row).
      {{2, 8, 2, 96, 1.0f / std::sqrt(96.0f), KvDtype::kBf16}, 700, {700, 250}},
      {{2, 4, 2, 72, 0.1f, KvDtype::kF32}, 260, {260, 99}},
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
    Inputs in;
    ASSERT_NO_FATAL_FAILURE(random_inputs(s, c.stride, c.lens, 1, in));

    CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(in.q)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dk, upload(in.k));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dv, upload(in.v));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(c.lens)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, upload_poison(in.q.size()));
    CXLPOOL_ASSERT_OK(kernels_->decode_attention(s, dq.ptr(), dk.ptr(), dv.ptr(), c.stride,
                                                 dlens.ptr(), dout.ptr()));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), in.q.size() * sizeof(float)));
    expect_close(as_floats(got), in.want);

    // The same cache scattered over a shuffled pool of pages.
    const uint32_t blocks_per_row = uint32_t((c.stride + page_tokens - 1) / page_tokens);
    Pages pages{uint64_t{s.batch} * blocks_per_row + 5, page_tokens, blocks_per_row};
    ASSERT_NO_FATAL_FAILURE(scatter_to_pages(s, in, c.stride, c.lens, 7, pages));
    uint32_t skipped = 0;
    ASSERT_NO_FATAL_FAILURE(run_paged(s, in, pages, c.lens, &skipped));
    EXPECT_EQ(skipped, 0u);
  }

  // NaN-filled outputs: an element the kernel leaves unwritten fails.
  Result<DeviceBuffer> upload_poison(size_t floats) const {
    return upload(bytes_of(std::vector<float>(floats, std::nanf(""))));
  }

  // The paged kernel over `pages` matches `in.want`; `*skipped` is the count
  // of tokens it skipped (not counted when `skipped` is null).
  void run_paged(const AttentionShape& s, const Inputs& in, const Pages& pages,
                 const std::vector<uint32_t>& lens, uint32_t* skipped) {
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dq, upload(bytes_of(in.q)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dkp, upload(pages.k));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dvp, upload(pages.v));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dlens, upload(bytes_of(lens)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dtable, upload(bytes_of(pages.table)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dskipped, upload_counter());
    CXLPOOL_ASSERT_OK_AND_ASSIGN(dout, upload_poison(in.q.size()));
    CXLPOOL_ASSERT_OK(kernels_->decode_attention_paged(
        s, dq.ptr(), dkp.ptr(), dvp.ptr(), pages.pool_pages, pages.page_tokens, dtable.ptr(),
        pages.blocks_per_row, dlens.ptr(), dout.ptr(), skipped != nullptr ? dskipped.ptr() : 0));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(dout.ptr(), in.q.size() * sizeof(float)));
    expect_close(as_floats(got), in.want);
    if (skipped != nullptr) {
      CXLPOOL_ASSERT_OK_AND_ASSIGN(count, download_counter(dskipped.ptr()));
      *skipped = count;
    }
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

// The same inputs cut into 1 split and into many, the partials combined by a
// reduce launch or by each row's last block: the results agree with the
// reference whatever the launch geometry. The empty row of a split launch
// still gets its zeros; a second call finds the fused counts back at zero.
TEST_F(GpuAttention, EverySplitCountMatchesReference) {
  const Case c{{3, 8, 2, 128, 1.0f / std::sqrt(128.0f), KvDtype::kF32}, 8192, {8192, 1300, 0}};
  // The register kernels: the staged ones have no fused combine (their
  // split counts are covered with the other cases below).
  kernels_->set_attention_staged(false);
  for (const bool fused : {true, false}) {
    kernels_->set_attention_fused_reduce(fused);
    // Both planners: slices of one length, and each row cut evenly.
    for (const bool equal : {true, false}) {
      kernels_->set_attention_equal_slices(equal);
      for (const uint32_t per_sm : {1u, 3u, Kernels::kMaxBlocksPerSm}) {
        CXLPOOL_ASSERT_OK(kernels_->set_attention_blocks_per_sm(per_sm));
        CXLPOOL_ASSERT_OK_AND_ASSIGN(plan, kernels_->attention_plan(c.shape, c.stride, 0, 0));
        SCOPED_TRACE(testing::Message() << (fused ? "fused" : "reduce launch") << ", " << per_sm
                                        << " blocks per SM: " << plan.n_splits << " splits of "
                                        << plan.split_len << " tokens");
        EXPECT_TRUE(plan.vector_loads);
        EXPECT_EQ(plan.split_len == 0, !equal);
        for (int call = 0; call < 2; ++call) {
          run_case(c, 16);
          if (HasFatalFailure()) return;
        }
      }
    }
  }
  kernels_->set_attention_fused_reduce(false);
  kernels_->set_attention_equal_slices(false);
  kernels_->set_attention_staged(true);
  EXPECT_FALSE(kernels_->set_attention_blocks_per_sm(0));
  EXPECT_FALSE(kernels_->set_attention_blocks_per_sm(Kernels::kMaxBlocksPerSm + 1));
}

// Both kernel designs (the shared-memory staged kernels serve 16-lane
// shapes but paged f32 caches; the register kernels everything when asked),
// with plain and overlapped launches, give the reference's results on every
// case, including split launches.
TEST_F(GpuAttention, BothKernelDesignsAndOverlappedLaunchesMatchReference) {
  for (const bool staged : {false, true}) {
    kernels_->set_attention_staged(staged);
    for (const bool overlap : {false, true}) {
      kernels_->set_attention_overlap(overlap);
      for (const Case& c : cases()) {
        CXLPOOL_ASSERT_OK_AND_ASSIGN(plan, kernels_->attention_plan(c.shape, c.stride, 0, 0));
        CXLPOOL_ASSERT_OK_AND_ASSIGN(paged_plan,
                                     kernels_->attention_plan(c.shape, c.stride, 0, 0, true));
        const bool sixteen = plan.token_lanes == 16 && plan.vector_loads;
        EXPECT_EQ(plan.staged, staged && sixteen);
        EXPECT_EQ(paged_plan.staged, staged && sixteen && c.shape.dtype == KvDtype::kBf16);
        for (const uint32_t per_sm : {1u, Kernels::kMaxBlocksPerSm}) {
          CXLPOOL_ASSERT_OK(kernels_->set_attention_blocks_per_sm(per_sm));
          for (const uint32_t page_tokens : {1u, 16u, 100u}) {
            SCOPED_TRACE(testing::Message()
                         << (overlap ? "overlapped" : "plain") << " launches, head_dim "
                         << c.shape.head_dim << " bf16 " << (c.shape.dtype == KvDtype::kBf16)
                         << " staged " << plan.staged << " page_tokens " << page_tokens
                         << " blocks/SM " << per_sm);
            run_case(c, page_tokens);
            if (HasFatalFailure()) return;
          }
        }
      }
    }
  }
  kernels_->set_attention_staged(true);
  kernels_->set_attention_overlap(true);
  CXLPOOL_ASSERT_OK(kernels_->set_attention_blocks_per_sm(Kernels::kDefaultBlocksPerSm));
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
  // What is left: attention over the 4 tokens of page 0, which is also the
  // whole 1-page pool.
  Inputs in;
  ASSERT_NO_FATAL_FAILURE(random_inputs(s, 4, {4}, 4, in));
  const Pages pages{1, page_tokens, 2, {0, 1}, in.k, in.v};
  uint32_t count = 0;
  ASSERT_NO_FATAL_FAILURE(run_paged(s, in, pages, lens, &count));
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
  // The register kernels, then the shared-memory staged ones where they
  // serve (bf16), which find the pages outside the pool as they copy.
  for (const bool staged : {false, true}) {
    kernels_->set_attention_staged(staged);
    for (const KvDtype dtype : {KvDtype::kF32, KvDtype::kBf16}) {
      for (const Rows& rows : rows_cases) {
        const AttentionShape s{2, 8, 2, 128, 0.09f, dtype};
        const uint32_t page_tokens = 16;
        const uint32_t blocks_per_row = rows.blocks_per_row;
        const uint64_t stride = uint64_t{blocks_per_row} * page_tokens;
        const std::vector<uint32_t>& lens = rows.lens;
        const std::vector<uint32_t>& kept = rows.kept;
        CXLPOOL_ASSERT_OK_AND_ASSIGN(plan, kernels_->attention_plan(s, stride, 0, 0, true));
        SCOPED_TRACE(testing::Message() << "staged " << staged << ", bf16 "
                                        << (dtype == KvDtype::kBf16) << ", " << blocks_per_row
                                        << " pages per row, " << plan.n_splits << " splits");
        Inputs in;
        ASSERT_NO_FATAL_FAILURE(random_inputs(s, stride, kept, 11, in));
        Pages pages{uint64_t{s.batch} * blocks_per_row, page_tokens, blocks_per_row};
        ASSERT_NO_FATAL_FAILURE(scatter_to_pages(s, in, stride, lens, 3, pages));
        for (uint32_t r = 0; r < s.batch; ++r) {
          for (uint32_t b = kept[r] / page_tokens; b < blocks_per_row; ++b) {
            pages.table[size_t{r} * blocks_per_row + b] = uint32_t(pages.pool_pages + b);
          }
        }
        uint32_t count = 0;
        ASSERT_NO_FATAL_FAILURE(run_paged(s, in, pages, lens, &count));
        EXPECT_EQ(count, ((lens[0] - kept[0]) + (lens[1] - kept[1])) * s.q_heads);
        EXPECT_EQ(plan.staged, staged && dtype == KvDtype::kBf16);
      }
    }
  }
  kernels_->set_attention_staged(true);
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
  Inputs in;
  ASSERT_NO_FATAL_FAILURE(random_inputs(s, stride, lens, 21, in));
  Pages pages{uint64_t{s.batch} * blocks_per_row, page_tokens, blocks_per_row};
  ASSERT_NO_FATAL_FAILURE(scatter_to_pages(s, in, stride, lens, 5, pages));
  // Only the pages filled above are ever read; the stated size decides which
  // kernel runs.
  pages.pool_pages = (uint64_t{1} << 32) / page_tokens;
  run_paged(s, in, pages, lens, nullptr);
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
