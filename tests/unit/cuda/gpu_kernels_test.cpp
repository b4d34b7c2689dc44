// SPDX-License-Identifier: Apache-2.0
// Every GPU kernel against its CPU reference, including the paths the CPU
// cannot tell apart (unaligned pointers, partial words, more work than one
// grid covers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "support/gpu_test_env.hpp"
#include "kv_copy_ref.hpp"
#include "pattern_ref.hpp"
#include "random_data.hpp"

namespace cxlpool::cuda::test {
namespace {

std::span<const std::byte> as_bytes(const std::vector<uint32_t>& v) {
  return std::as_bytes(std::span<const uint32_t>(v));
}

using GpuKernels = GpuTest;

TEST_F(GpuKernels, FillPatternMatchesReference) {
  for (const size_t size : {size_t{1}, size_t{7}, size_t{8}, size_t{4099}, size_t{1} << 20}) {
    for (const size_t offset : {size_t{0}, size_t{3}}) {
      CXLPOOL_ASSERT_OK_AND_ASSIGN(buf, DeviceBuffer::allocate(*ctx_, size + offset));
      CXLPOOL_ASSERT_OK(kernels_->fill_pattern(buf.ptr() + offset, size, 0xC0FFEE + size));
      CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download(buf.ptr() + offset, size));
      std::vector<std::byte> want(size);
      ref::fill_pattern(want, 0xC0FFEE + size);
      EXPECT_EQ(got, want) << "size " << size << " offset " << offset;
    }
  }
}

TEST_F(GpuKernels, ChecksumMatchesReference) {
  const auto data = random_bytes((size_t{1} << 20) + 13, 21);
  CXLPOOL_ASSERT_OK_AND_ASSIGN(buf, upload(data));
  for (const size_t offset : {size_t{0}, size_t{1}, size_t{8}}) {
    for (const size_t size : {size_t{0}, size_t{5}, size_t{64}, size_t{100000}, data.size() - 8}) {
      CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(buf.ptr() + offset, size));
      EXPECT_EQ(sum, ref::checksum(std::span(data).subspan(offset, size)))
          << "offset " << offset << " size " << size;
    }
  }
}

TEST_F(GpuKernels, FillAndChecksumBeyondOneGrid) {
  // 65535 blocks x 256 threads x 8 bytes is 128 MiB; go past it so the
  // grid-stride loops do a second round.
  const size_t size = size_t{160} << 20;
  CXLPOOL_ASSERT_OK_AND_ASSIGN(buf, DeviceBuffer::allocate(*ctx_, size));
  CXLPOOL_ASSERT_OK(kernels_->fill_pattern(buf.ptr(), size, 99));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(buf.ptr(), size));
  std::vector<std::byte> want(size);
  ref::fill_pattern(want, 99);
  EXPECT_EQ(sum, ref::checksum(want));
}

struct KvCase {
  uint64_t page_bytes;
  uint64_t arena_pages;
  uint32_t n_pages;
};

class GpuKvCopy : public GpuTest, public ::testing::WithParamInterface<KvCase> {
 protected:
  enum class Direction { kGather, kScatter };

  // Runs kv_gather (arena -> pages) or kv_scatter (pages -> arena) on the
  // device and ref::kv_gather/kv_scatter on host copies; the side written and
  // the count of skipped pages agree. `want_skipped` is the reference's count.
  void expect_copy_matches(Direction direction, const std::vector<std::byte>& arena,
                           const std::vector<uint32_t>& index,
                           const std::vector<std::byte>& pages, uint32_t& want_skipped) {
    const KvCase c = GetParam();
    CXLPOOL_ASSERT_OK_AND_ASSIGN(d_arena, upload(arena));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(d_index, upload(as_bytes(index)));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(d_pages, upload(pages));
    CXLPOOL_ASSERT_OK_AND_ASSIGN(d_skipped, upload_counter());
    const bool gather = direction == Direction::kGather;
    auto want = gather ? pages : arena;
    if (gather) {
      CXLPOOL_ASSERT_OK(kernels_->kv_gather(d_pages.ptr(), d_arena.ptr(), c.arena_pages,
                                            d_index.ptr(), c.n_pages, c.page_bytes,
                                            d_skipped.ptr()));
      want_skipped = ref::kv_gather(want.data(), arena.data(), c.arena_pages, index, c.page_bytes);
    } else {
      CXLPOOL_ASSERT_OK(kernels_->kv_scatter(d_arena.ptr(), d_pages.ptr(), c.arena_pages,
                                             d_index.ptr(), c.n_pages, c.page_bytes,
                                             d_skipped.ptr()));
      want_skipped = ref::kv_scatter(want.data(), c.arena_pages, pages.data(), index, c.page_bytes);
    }
    CXLPOOL_ASSERT_OK_AND_ASSIGN(got, download((gather ? d_pages : d_arena).ptr(), want.size()));
    EXPECT_TRUE(got == want);
    CXLPOOL_ASSERT_OK_AND_ASSIGN(got_skipped, download_counter(d_skipped.ptr()));
    EXPECT_EQ(got_skipped, want_skipped);
  }
};

TEST_P(GpuKvCopy, GatherMatchesReference) {
  const KvCase c = GetParam();
  const auto arena = random_bytes(c.arena_pages * c.page_bytes, 31);
  std::mt19937 gen(32);
  std::vector<uint32_t> index(c.n_pages);
  for (auto& i : index) i = gen() % (c.arena_pages + c.arena_pages / 8 + 1);  // ~11% out of range
  const auto initial = random_bytes(size_t{c.n_pages} * c.page_bytes, 33);

  uint32_t want_skipped = 0;
  ASSERT_NO_FATAL_FAILURE(
      expect_copy_matches(Direction::kGather, arena, index, initial, want_skipped));
  EXPECT_GT(want_skipped, 0u);
}

TEST_P(GpuKvCopy, ScatterMatchesReference) {
  const KvCase c = GetParam();
  const auto arena = random_bytes(c.arena_pages * c.page_bytes, 41);
  // Distinct in-range targets (a repeated index has no single right answer),
  // plus a few out-of-range ones.
  ASSERT_LE(c.n_pages, c.arena_pages);
  std::mt19937 gen(42);
  std::vector<uint32_t> perm(c.arena_pages);
  std::iota(perm.begin(), perm.end(), 0u);
  std::shuffle(perm.begin(), perm.end(), gen);
  std::vector<uint32_t> index(c.n_pages);
  for (uint32_t i = 0; i < c.n_pages; ++i) {
    index[i] = i % 10 == 9 ? static_cast<uint32_t>(c.arena_pages + i) : perm[i % c.arena_pages];
  }
  const auto src = random_bytes(size_t{c.n_pages} * c.page_bytes, 43);

  uint32_t want_skipped = 0;
  ASSERT_NO_FATAL_FAILURE(expect_copy_matches(Direction::kScatter, arena, index, src, want_skipped));
}

// 16 KiB pages take the 16-byte vector path, 4100-byte pages the byte path,
// and 70000 pages are more than one grid of blocks.
INSTANTIATE_TEST_SUITE_P(Shapes, GpuKvCopy,
                         ::testing::Values(KvCase{16384, 64, 48}, KvCase{4100, 32, 30},
                                           KvCase{64, 80000, 70000}),
                         [](const auto& info) {
                           return "page" + std::to_string(info.param.page_bytes) + "_n" +
                                  std::to_string(info.param.n_pages);
                         });

TEST_F(GpuKernels, GatherThenScatterRoundTripsThroughStaging) {
  const uint64_t page = 8192, pages = 40;
  const auto arena = random_bytes(pages * page, 51);
  const std::vector<uint32_t> index = {39, 2, 17, 0, 25};
  const auto n = static_cast<uint32_t>(index.size());
  CXLPOOL_ASSERT_OK_AND_ASSIGN(d_arena, upload(arena));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(d_index, upload(as_bytes(index)));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(staging, DeviceBuffer::allocate(*ctx_, index.size() * page));
  CXLPOOL_ASSERT_OK(
      kernels_->kv_gather(staging.ptr(), d_arena.ptr(), pages, d_index.ptr(), n, page));
  // Wipe the listed pages, then scatter the staged copy back.
  for (uint32_t p : index) {
    CXLPOOL_ASSERT_OK(kernels_->fill_pattern(d_arena.ptr() + p * page, page, p));
  }
  CXLPOOL_ASSERT_OK(
      kernels_->kv_scatter(d_arena.ptr(), staging.ptr(), pages, d_index.ptr(), n, page));
  CXLPOOL_ASSERT_OK_AND_ASSIGN(sum, kernels_->checksum(d_arena.ptr(), arena.size()));
  EXPECT_EQ(sum, ref::checksum(arena));
}

}  // namespace
}  // namespace cxlpool::cuda::test
