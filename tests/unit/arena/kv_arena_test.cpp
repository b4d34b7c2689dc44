// SPDX-License-Identifier: Apache-2.0
// KvArena over the host backend with its own memory (no daemon): tensors are
// real memory where steps say so, step_async's worker maps ahead, freed
// rows' pages move (bytes and all) to rows that need them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backing.hpp"
#include "copy_worker.hpp"
#include "host_vmm.hpp"
#include "support/host_copy_engine.hpp"
#include "support/wait_until.hpp"
#include "kv_arena_impl.hpp"

namespace cxlpool::client::arena {
namespace {

constexpr uint64_t kPage = 64 * 1024;

cxlpool_kv_arena_config config(uint32_t async, uint64_t limit = 0) {
  cxlpool_kv_arena_config c{};
  c.layers = 2;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.dtype_bytes = 2;  // 64 B tokens: 1024 tokens per page
  c.max_batch = 8;
  c.max_context = 4096;
  c.page_bytes = kPage;
  c.region_bytes = 16 * kPage;
  c.memory_limit_bytes = limit;
  c.async = async;
  return c;
}

std::unique_ptr<KvArena> make(const cxlpool_kv_arena_config& c,
                              PagePlacement placement = PagePlacement::kContiguous) {
  auto a = KvArena::create(nullptr, c, drivers::make_host_vmm(), make_own_backing(), placement);
  EXPECT_TRUE(a) << a.error().message;
  return a ? std::move(*a) : nullptr;
}

// A synchronous arena with one row stepped to `tokens`; null on failure
// (reported).
std::unique_ptr<KvArena> with_row(uint32_t tokens, uint32_t* row) {
  auto a = make(config(0));
  if (!a) return nullptr;
  auto r = a->alloc_reqid();
  if (!r) {
    ADD_FAILURE() << r.error().message;
    return nullptr;
  }
  std::vector<uint32_t> seq(8, 0);
  seq[*r] = tokens;
  if (auto st = a->step(seq); !st) {
    ADD_FAILURE() << st.error().message;
    return nullptr;
  }
  *row = *r;
  return a;
}

TEST(KvArena, TensorsDescribeOneReservation) {
  auto a = make(config(0));
  ASSERT_TRUE(a);
  auto k0 = a->tensor(0, CXLPOOL_ARENA_K);
  auto v0 = a->tensor(0, CXLPOOL_ARENA_V);
  auto k1 = a->tensor(1, CXLPOOL_ARENA_K);
  ASSERT_TRUE(k0 && v0 && k1);
  EXPECT_EQ(k0->token_stride, 64u);
  EXPECT_EQ(k0->row_stride, 4u * kPage);
  EXPECT_EQ(k0->bytes, 8u * 4 * kPage);
  EXPECT_EQ(v0->base, k0->base + k0->bytes);
  EXPECT_EQ(k1->base, k0->base + 2 * k0->bytes);
  EXPECT_EQ(k0->base % kPage, 0u);
  EXPECT_FALSE(a->tensor(2, CXLPOOL_ARENA_K));
  auto c = config(0);
  c.layout = CXLPOOL_ARENA_LAYOUT_FUSED;
  auto fused = make(c);
  ASSERT_TRUE(fused);
  auto f = fused->tensor(1, CXLPOOL_ARENA_V);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->bytes, 4u * 8 * 4 * kPage);
  EXPECT_EQ(f->base, fused->tensor(0, 0)->base);
}

TEST(KvArena, StepMakesRowsWritable) {
  uint32_t r = 0;
  auto a = with_row(1500, &r);
  ASSERT_TRUE(a);
  for (uint32_t l = 0; l < 2; ++l) {
    for (uint32_t kind = 0; kind < 2; ++kind) {
      uint8_t* row = a->row_address(r, l, kind);
      std::memset(row, int(l * 2 + kind + 1), 1500 * 64);
    }
  }
  EXPECT_EQ(a->row_address(r, 1, 1)[1499 * 64], 4);
  const auto s = a->stats();
  EXPECT_EQ(s.mapped_bytes, 2u * 4 * kPage);
  EXPECT_EQ(s.steps, 1u);
  EXPECT_EQ(s.rows_active, 1u);
  EXPECT_EQ(s.region_bytes, 16u * kPage);
  EXPECT_GT(s.map_ns_total, 0u);
  EXPECT_GE(s.map_ns_max, s.map_ns_total / s.maps);
}

TEST(KvArena, AsyncStepsMapAheadOnTheWorker) {
  auto a = make(config(1));
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(8, 0);
  uint64_t maps_seen = 0;
  // Decode: one token per step; the worker keeps a page ahead.
  for (uint32_t t = 1; t <= 3000; ++t) {
    seq[*r] = t;
    ASSERT_TRUE(a->step_async(seq));
    if (t == 1) {
      EXPECT_EQ(a->step_async(seq).error().code, EBUSY);
    }
    // Left alone, the worker maps a page ahead (wait() would cut that
    // speculation short: it waits only for what the step needs).
    EXPECT_TRUE(test::wait_until(
        [&] { return a->row_mapped_tokens(*r) >= std::min<uint32_t>(t + 1024, 4096); },
        std::chrono::seconds(10), std::chrono::milliseconds(1)))
        << t;
    ASSERT_TRUE(a->wait());
    // What the step asked for is there and writable.
    a->row_address(*r, 1, 1)[uint64_t{t - 1} * 64] = 7;
    EXPECT_GE(a->row_mapped_tokens(*r), t) << t;
    maps_seen = a->stats().maps;
  }
  const auto s = a->stats();
  EXPECT_EQ(s.async_steps, 3000u);
  EXPECT_EQ(maps_seen, 4u * 4);  // 4 pages per tensor: everything up to 4096
  EXPECT_TRUE(a->wait());        // nothing pending: fine
}

TEST(KvArena, AsyncStepReportsItsErrorOnWait) {
  auto a = make(config(1, 4 * kPage));  // one page group
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  ASSERT_TRUE(r);
  std::vector<uint32_t> seq(8, 0);
  seq[*r] = 2000;  // 2 groups
  ASSERT_TRUE(a->step_async(seq));
  auto w = a->wait();
  ASSERT_FALSE(w);
  EXPECT_EQ(w.error().code, ENOMEM);
  seq[3] = 1;  // not allocated: rejected at once
  EXPECT_EQ(a->step_async(seq).error().code, ENOENT);
}

// An arena limited to one page group (4 tensors x 64 KiB) whose row x
// holds 10 tokens and so the whole group; row y is allocated and empty.
struct OneGroupArena {
  std::unique_ptr<KvArena> a;
  uint32_t x = 0;
  uint32_t y = 0;
  std::vector<uint32_t> seq = std::vector<uint32_t>(8, 0);
};

void fill_one_group(OneGroupArena& f) {
  f.a = make(config(0, 4 * kPage));
  ASSERT_TRUE(f.a);
  auto x = f.a->alloc_reqid();
  auto y = f.a->alloc_reqid();
  ASSERT_TRUE(x && y);
  f.x = *x;
  f.y = *y;
  f.seq[f.x] = 10;
  ASSERT_TRUE(f.a->step(f.seq));
}

TEST(KvArena, ReclaimedPagesMoveWithTheirBytes) {
  OneGroupArena f;
  ASSERT_NO_FATAL_FAILURE(fill_one_group(f));
  auto& [a, x, y, seq] = f;
  std::memset(a->row_address(x, 0, 1), 0x5A, 640);
  seq[y] = 5;
  EXPECT_EQ(a->step(seq).error().code, ENOMEM);
  ASSERT_TRUE(a->free_reqid(x));
  seq[x] = 0;
  ASSERT_TRUE(a->step(seq));
  // Moved, not copied and not cleared: the same physical page.
  EXPECT_EQ(a->row_address(y, 0, 1)[639], 0x5A);
  EXPECT_EQ(a->stats().reuses, 4u);
  ASSERT_TRUE(a->free_reqid(y));
  ASSERT_TRUE(a->trim(0));
  const auto s = a->stats();
  EXPECT_EQ(s.mapped_bytes, 0u);
  EXPECT_EQ(s.region_bytes, 0u);
}

long vma_count() {
  std::ifstream maps("/proc/self/maps");
  long n = 0;
  std::string line;
  while (std::getline(maps, line)) ++n;
  return n;
}

// Kernel VMAs an arena of 64 KiB pages adds to the process when its rows
// grow decode-style (all rows a token at a time, requests of different
// lengths), with the given page placement.
struct VmaRun {
  long vmas = 0;
  uint64_t pages = 0;
};

VmaRun grow_and_count(PagePlacement placement) {
  auto c = config(1);
  c.max_batch = 16;
  c.max_context = 16384;     // 16 pages per row and tensor
  c.region_bytes = 64 << 20; // 1024 pages per region
  const long before = vma_count();
  auto a = make(c, placement);
  if (!a) return {};
  std::vector<uint32_t> seq(16, 0), target(16, 0);
  for (uint32_t i = 0; i < 16; ++i) {
    auto r = a->alloc_reqid();
    if (!r) return {};
    target[*r] = 2000 + 700 * i;  // 2..12 pages
  }
  for (uint32_t t = 1; t <= 12500; t += 7) {
    for (uint32_t r = 0; r < 16; ++r) seq[r] = std::min(t, target[r]);
    if (!a->step(seq)) return {};  // no map-ahead: the same pages each run
  }
  VmaRun out;
  out.vmas = vma_count() - before;
  out.pages = a->stats().mapped_bytes / kPage;
  return out;
}

TEST(KvArena, ConsecutivePagesOfARowShareOneMapping) {
  const VmaRun scattered = grow_and_count(PagePlacement::kFirstFree);
  const VmaRun contiguous = grow_and_count(PagePlacement::kContiguous);
  ASSERT_GT(scattered.pages, 0u);
  EXPECT_EQ(contiguous.pages, scattered.pages);
  // 16 rows x 4 tensors = 64 row-tensors: one mapping each plus the
  // PROT_NONE hole after it, when every row's pages merged.
  RecordProperty("pages_mapped", std::to_string(contiguous.pages));
  RecordProperty("vmas_first_free", std::to_string(scattered.vmas));
  RecordProperty("vmas_contiguous", std::to_string(contiguous.vmas));
  std::printf("64 KiB pages: %lu mapped; VMAs added: %ld first-free, %ld contiguous\n",
              static_cast<unsigned long>(contiguous.pages), scattered.vmas, contiguous.vmas);
  EXPECT_GE(scattered.vmas, static_cast<long>(scattered.pages));
  EXPECT_LE(contiguous.vmas, 2 * 64 + 16);
}

TEST(KvArena, PinnedRowsKeepTheirPages) {
  OneGroupArena f;
  ASSERT_NO_FATAL_FAILURE(fill_one_group(f));
  auto& [a, x, y, seq] = f;
  // A copy holds x: freed, its pages are still not reclaimable or reusable.
  ASSERT_TRUE(a->pin_row(x));
  ASSERT_TRUE(a->free_reqid(x));
  seq[x] = 0;
  seq[y] = 5;
  EXPECT_EQ(a->step(seq).error().code, ENOMEM);
  for (int i = 0; i < 6; ++i) {
    auto r = a->alloc_reqid();
    ASSERT_TRUE(r);
    EXPECT_NE(*r, x);
  }
  EXPECT_EQ(a->alloc_reqid().error().code, ENOSPC);
  ASSERT_TRUE(a->trim(0));
  EXPECT_EQ(a->stats().mapped_bytes, 4 * kPage);
  a->unpin_row(x);
  ASSERT_TRUE(a->step(seq));  // now y takes x's pages
  EXPECT_EQ(a->stats().reuses, 4u);
  EXPECT_FALSE(a->pin_row(7 + 100));
}

// Packs tokens 100..2099 of one row and unpacks them into another row at
// the same place, through `engine` (a device arena's path) or memcpy.
void pack_and_unpack(hal::GpuCopyEngine* engine) {
  auto a = make(config(0));
  ASSERT_TRUE(a);
  auto r = a->alloc_reqid();
  auto s = a->alloc_reqid();
  ASSERT_TRUE(r && s);
  std::vector<uint32_t> seq(8, 0);
  seq[*r] = 3000;
  seq[*s] = 3000;
  ASSERT_TRUE(a->step(seq));
  for (uint32_t l = 0; l < 2; ++l) {
    for (uint32_t k = 0; k < 2; ++k) {
      uint8_t* p = a->row_address(*r, l, k);
      for (uint32_t i = 0; i < 3000 * 64; ++i) p[i] = static_cast<uint8_t>(i * 7 + l * 3 + k);
    }
  }
  CopyWorker w(a->geometry(), a->base());
  if (engine != nullptr) w.use_engine(engine);
  std::vector<uint8_t> packed(3000 * 64 * 4);
  CopyJob out;
  out.ticket = 1;
  out.row = *r;
  out.segments.push_back(CopySegment{false, 100, 2000, packed.data()});
  w.submit(std::move(out));
  CopyJob in;
  in.ticket = 2;
  in.row = *s;
  in.then_op = 9;
  in.segments.push_back(CopySegment{true, 100, 2000, packed.data()});
  w.submit(std::move(in));
  std::vector<CopyJob> done;
  while (done.size() < 2) {
    w.wait_done(1000);
    for (auto& j : w.take_done()) done.push_back(std::move(j));
  }
  EXPECT_EQ(done[0].ticket, 1u);
  EXPECT_EQ(done[1].ticket, 2u);
  EXPECT_EQ(done[1].then_op, 9u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_EQ(done[0].bytes, 2000u * 64 * 4);
  EXPECT_EQ(w.bytes_copied(), 2u * 2000 * 64 * 4);
  // Packed order: layer, K/V, token.
  EXPECT_EQ(packed[2000 * 64 * 3], static_cast<uint8_t>(100 * 64 * 7 + 3 + 1));
  for (uint32_t l = 0; l < 2; ++l) {
    for (uint32_t k = 0; k < 2; ++k) {
      EXPECT_EQ(std::memcmp(a->row_address(*s, l, k) + 100 * 64, a->row_address(*r, l, k) + 100 * 64, 2000 * 64),
                0);
      EXPECT_EQ(a->row_address(*s, l, k)[99 * 64], 0);
    }
  }
}

TEST(CopyWorker, PacksAndUnpacksRowsOnItsThread) { pack_and_unpack(nullptr); }

// A device arena's copies go through the GPU's copy engine (here one over
// host memory): bound once on the worker thread, each job synchronized.
// With pinned memory the copies are staged through it; without, each run
// is a copy of its own. The same bytes arrive either way.
TEST(CopyWorker, DeviceArenasCopyThroughTheEngine) {
  for (const bool pinned : {true, false}) {
    SCOPED_TRACE(pinned ? "staged through pinned buffers" : "no pinned memory");
    auto& log = cxlpool::test::host_copy_engine_log();
    log.reset();
    log.refuse_pinned = !pinned;
    auto engine = cxlpool::test::open_host_copy_engine(0);
    ASSERT_TRUE(engine);
    pack_and_unpack(engine->get());
    EXPECT_EQ(log.bound_threads, 1);
    EXPECT_EQ(log.bytes_to_host, 2000u * 64 * 4);
    EXPECT_EQ(log.bytes_to_device, 2000u * 64 * 4);
    EXPECT_GE(log.synchronizes, 2);
  }
}

// A copy the engine refuses fails its job with the engine's errno and text,
// and counts no bytes.
TEST(CopyWorker, EngineFailureFailsTheJob) {
  auto& log = cxlpool::test::host_copy_engine_log();
  log.reset();
  log.fail_copies_with = EFAULT;
  auto engine = cxlpool::test::open_host_copy_engine(0);
  ASSERT_TRUE(engine);
  uint32_t r = 0;
  auto a = with_row(64, &r);
  ASSERT_TRUE(a);
  CopyWorker w(a->geometry(), a->base());
  w.use_engine(engine->get());
  std::vector<uint8_t> packed(64 * 64 * 4);
  CopyJob job;
  job.ticket = 3;
  job.row = r;
  job.segments.push_back(CopySegment{false, 0, 64, packed.data()});
  w.submit(std::move(job));
  std::vector<CopyJob> done;
  while (done.empty()) {
    w.wait_done(1000);
    done = w.take_done();
  }
  EXPECT_EQ(done[0].error, EFAULT);
  EXPECT_NE(done[0].error_text.find("refused"), std::string::npos) << done[0].error_text;
  EXPECT_EQ(done[0].bytes, 0u);
  EXPECT_EQ(w.bytes_copied(), 0u);
}

}  // namespace
}  // namespace cxlpool::client::arena
