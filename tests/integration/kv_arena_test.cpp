// SPDX-License-Identifier: Apache-2.0
// The KV arena (kv_arena.h) on cxlpoold's memory: rows grow on step, freed
// rows' pages are reused, the memory limit fails a step with ENOMEM until a
// row is freed, trim returns the regions, and a row's KV goes through the KV
// store and comes back byte for byte (fewer tokens when chunks were lost),
// and a restore's copy runs off the caller's thread: while it is held up
// in the row (a userfaultfd minor fault), another row's step completes.
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "cxlpool/kv_arena.h"
#include "cxlpool/kv_arena.hpp"
#include "daemon_process.hpp"
#include "kv_connection.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

constexpr uint64_t kPage = 64 * 1024;
constexpr uint32_t kChunk = 16;     // tokens per store chunk
constexpr uint64_t kTokenBytes = 64; // 2 KV heads x 16 dims x 2 bytes
constexpr uint32_t kLayers = 2;

std::string config_with_store() {
  std::ostringstream t;
  t << "[kvstore]\n"
    << "slot_bytes = " << 64 * 1024 << "\n"
    << "dram_bytes = " << 32 * 64 * 1024 << "\n"
    << "cxl_bytes = 0\n"
    << "put_window_bytes = " << 8 * 64 * 1024 << "\n";
  return TestConfig{.tables = t.str()}.render();
}

cxlpool_kv_arena_config arena_config(uint64_t limit = 0) {
  cxlpool_kv_arena_config c{};
  c.layers = kLayers;
  c.kv_heads = 2;
  c.head_dim = 16;
  c.dtype_bytes = 2;
  c.max_batch = 4;
  c.max_context = 4096;  // 4 pages per row and tensor
  c.page_bytes = kPage;
  c.layout = CXLPOOL_ARENA_LAYOUT_PER_LAYER;
  c.backend = CXLPOOL_ARENA_BACKEND_HOST;
  c.tier_id = UINT32_MAX;
  c.region_bytes = 1 << 20;
  c.memory_limit_bytes = limit;
  return c;
}

uint8_t* row_ptr(cxlpool_kv_arena* a, uint32_t row, uint32_t layer, uint32_t kind) {
  cxlpool_kv_arena_tensor t{};
  EXPECT_EQ(cxlpool_kv_arena_get_tensor(a, layer, kind, &t), 0);
  return reinterpret_cast<uint8_t*>(t.base + row * t.row_stride);
}

uint8_t pattern(uint32_t layer, uint32_t kind, uint64_t byte) {
  return static_cast<uint8_t>((byte * 131 + layer * 17 + kind * 7 + (byte >> 8)) & 0xff);
}

void fill_row(cxlpool_kv_arena* a, uint32_t row, uint32_t tokens) {
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (uint32_t k = 0; k < 2; ++k) {
      uint8_t* p = row_ptr(a, row, l, k);
      for (uint64_t i = 0; i < tokens * kTokenBytes; ++i) p[i] = pattern(l, k, i);
    }
  }
}

void clear_row(cxlpool_kv_arena* a, uint32_t row, uint32_t tokens) {
  for (uint32_t l = 0; l < kLayers; ++l) {
    for (uint32_t k = 0; k < 2; ++k) std::memset(row_ptr(a, row, l, k), 0, tokens * kTokenBytes);
  }
}

// Tokens [0, n) of the row that hold the pattern (the length of the
// matching prefix, in tokens).
uint32_t matching_tokens(cxlpool_kv_arena* a, uint32_t row, uint32_t tokens) {
  for (uint32_t t = 0; t < tokens; ++t) {
    for (uint32_t l = 0; l < kLayers; ++l) {
      for (uint32_t k = 0; k < 2; ++k) {
        const uint8_t* p = row_ptr(a, row, l, k);
        for (uint64_t i = t * kTokenBytes; i < (t + 1) * kTokenBytes; ++i) {
          if (p[i] != pattern(l, k, i)) return t;
        }
      }
    }
  }
  return tokens;
}

std::vector<uint32_t> prompt(uint32_t seed, size_t n) {
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>((seed * 7919 + i * 104729) % 50000);
  return out;
}

class KvArena : public testing::Test {
 protected:
  void SetUp() override {
    daemon_ = std::make_unique<DaemonProcess>(config_with_store());
    ASSERT_TRUE(daemon_->start());
    ASSERT_EQ(cxlpool_connect(daemon_->socket().c_str(), "kv-arena-test", &client_), 0);
  }
  void TearDown() override {
    cxlpool_kv_arena_destroy(arena_);
    cxlpool_kv_close(kv_);
    cxlpool_disconnect(client_);
  }
  void create(uint64_t limit = 0) {
    auto c = arena_config(limit);
    ASSERT_EQ(cxlpool_kv_arena_create(client_, &c, &arena_), 0) << cxlpool_last_error();
  }
  cxlpool_kv_arena_stats stats() {
    cxlpool_kv_arena_stats s{};
    EXPECT_EQ(cxlpool_kv_arena_get_stats(arena_, &s), 0);
    return s;
  }
  // Bytes the daemon has handed out on its tiers.
  uint64_t tiers_used() {
    cxlpool_tier_info tiers[16];
    const int n = cxlpool_tiers(client_, tiers, 16);
    uint64_t used = 0;
    for (int i = 0; i < n && i < 16; ++i) used += tiers[i].used;
    return used;
  }
  cxlpool_kv_namespace open_store() {
    EXPECT_EQ(cxlpool_kv_open(client_, nullptr, &kv_), 0);
    const auto spec = kv_namespace_spec("arena-itest", "cxlpool-arena", kChunk);
    cxlpool_kv_namespace ns{};
    EXPECT_EQ(cxlpool_kv_namespace_open(kv_, &spec, &ns), 0) << cxlpool_last_error();
    return ns;
  }
  // Allocates a row, steps it to `n` tokens and fills them with the pattern;
  // `seq` holds every row's length for the later steps.
  void fill_new_row(uint32_t n, uint32_t* seq, uint32_t* row) {
    ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, row), 0);
    seq[*row] = n;
    ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
    fill_row(arena_, *row, n);
  }
  // Offloads the row's n tokens to the store and waits until all are copied.
  void offload_and_wait(const cxlpool_kv_namespace& ns, uint32_t row, const std::vector<uint32_t>& toks, uint32_t n) {
    uint64_t ticket = 0, done = 0;
    ASSERT_EQ(cxlpool_kv_arena_offload_begin(arena_, kv_, &ns, row, toks.data(), n, &ticket), 0)
        << cxlpool_last_error();
    ASSERT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &done), 0) << cxlpool_last_error();
    ASSERT_EQ(done, n);
  }

  std::unique_ptr<DaemonProcess> daemon_;
  cxlpool_client* client_ = nullptr;
  cxlpool_kv* kv_ = nullptr;
  cxlpool_kv_arena* arena_ = nullptr;
};

TEST_F(KvArena, RowsGrowOnDaemonMemoryAndFreedPagesAreReused) {
  const uint64_t used_before = tiers_used();
  create();
  uint32_t a = 0, b = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &a), 0);
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &b), 0);
  uint32_t seq[4] = {};
  seq[a] = 100;
  seq[b] = 1500;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0) << cxlpool_last_error();
  fill_row(arena_, a, 100);
  fill_row(arena_, b, 1500);
  EXPECT_EQ(matching_tokens(arena_, b, 1500), 1500u);
  auto s = stats();
  // a: 1 page, b: 2 pages, in 4 tensors.
  EXPECT_EQ(s.mapped_bytes, 12 * kPage);
  EXPECT_EQ(s.pages_in_use, 12u);
  EXPECT_EQ(s.region_bytes, 1u << 20);
  EXPECT_EQ(s.rows_active, 2u);
  EXPECT_EQ(s.backend, uint32_t{CXLPOOL_ARENA_BACKEND_HOST});
  EXPECT_GE(tiers_used() - used_before, uint64_t{1} << 20);  // the daemon's region

  // Growing row a decode-style: one more page per tensor when it crosses 1024.
  for (uint32_t t = 101; t <= 1100; ++t) {
    seq[a] = t;
    ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  }
  EXPECT_EQ(stats().maps, 16u);

  // b finishes; the next request gets b's row with its pages mapped.
  ASSERT_EQ(cxlpool_kv_arena_free_reqid(arena_, b), 0);
  EXPECT_EQ(stats().pages_deferred, 8u);
  uint32_t c = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &c), 0);
  EXPECT_EQ(c, b);
  seq[b] = 0;
  seq[c] = 2000;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  s = stats();
  EXPECT_EQ(s.maps, 16u);  // nothing new mapped
  EXPECT_EQ(s.reuses, 8u);
  EXPECT_EQ(s.pages_deferred, 0u);
  uint32_t idle = 0;
  while (idle == a || idle == c) ++idle;
  EXPECT_EQ(cxlpool_kv_arena_free_reqid(arena_, idle), -ENOENT);
}

TEST_F(KvArena, MemoryLimitFailsTheStepUntilARowIsFreed) {
  create(3 * 4 * kPage);  // three page groups
  uint32_t a = 0, b = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &a), 0);
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &b), 0);
  uint32_t seq[4] = {};
  seq[a] = 2048;  // two groups
  seq[b] = 1000;  // one group
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  fill_row(arena_, b, 1000);
  seq[b] = 1025;
  EXPECT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), -ENOMEM);
  EXPECT_NE(std::string(cxlpool_last_error()).find("memory_limit_bytes"), std::string::npos);
  EXPECT_EQ(stats().mapped_bytes, 12 * kPage);
  // a is done: its pages are reclaimed for b, the limit holds.
  ASSERT_EQ(cxlpool_kv_arena_free_reqid(arena_, a), 0);
  seq[a] = 0;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0) << cxlpool_last_error();
  auto s = stats();
  EXPECT_EQ(s.mapped_bytes, 12 * kPage);
  EXPECT_EQ(s.pages_deferred, 4u);
  EXPECT_EQ(s.reuses, 4u);
  EXPECT_EQ(matching_tokens(arena_, b, 1000), 1000u);  // b's own bytes untouched
  // Trim gives the rest back; freeing b and trimming to 0 empties the region.
  const uint64_t used_mapped = tiers_used();
  ASSERT_EQ(cxlpool_kv_arena_free_reqid(arena_, b), 0);
  ASSERT_EQ(cxlpool_kv_arena_trim(arena_, 0), 0);
  s = stats();
  EXPECT_EQ(s.mapped_bytes, 0u);
  EXPECT_EQ(s.region_bytes, 0u);
  EXPECT_LE(tiers_used() + (1u << 20), used_mapped);
}

TEST_F(KvArena, OffloadThenRestoreIsByteExact) {
  create();
  const auto ns = open_store();
  const uint32_t n = 5 * kChunk + 7;  // five full chunks and a partial one
  const auto toks = prompt(1, n);
  uint32_t seq[4] = {};
  uint32_t row = 0, other = 0;
  ASSERT_NO_FATAL_FAILURE(fill_new_row(n, seq, &row));
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &other), 0);

  uint64_t ticket = 0, done = 0;
  ASSERT_EQ(cxlpool_kv_arena_offload_begin(arena_, kv_, &ns, row, toks.data(), n, &ticket), 0)
      << cxlpool_last_error();
  // Another row keeps stepping while the offload is in flight.
  for (uint32_t t = 1; t <= 64; ++t) {
    seq[other] = t;
    ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
    const int rc = cxlpool_kv_arena_offload_poll(arena_, ticket, 0, &done);
    if (rc == 0) break;
    ASSERT_EQ(rc, -EINPROGRESS) << cxlpool_last_error();
  }
  int rc = cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &done);
  if (rc == -ENOENT) rc = 0;  // finished during the loop above
  ASSERT_EQ(rc, 0) << cxlpool_last_error();
  EXPECT_EQ(done, n);

  // The store holds the five full chunks.
  std::vector<cxlpool_kv_key> keys(5);
  ASSERT_EQ(cxlpool_kv_compute_keys(&ns, toks.data(), n, nullptr, keys.data(), keys.size()), 5);
  EXPECT_EQ(cxlpool_kv_lookup(kv_, ns.id, keys.data(), 5, nullptr), 5);

  // Preempted: the row goes, its reqid comes back with garbage in it.
  ASSERT_EQ(cxlpool_kv_arena_free_reqid(arena_, row), 0);
  uint32_t resumed = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &resumed), 0);
  seq[row] = 0;
  seq[resumed] = n;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  clear_row(arena_, resumed, n);
  ASSERT_EQ(cxlpool_kv_arena_restore_begin(arena_, kv_, &ns, resumed, toks.data(), n, &ticket), 0)
      << cxlpool_last_error();
  uint64_t restored = 0;
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &restored), 0) << cxlpool_last_error();
  EXPECT_EQ(restored, n);
  EXPECT_EQ(matching_tokens(arena_, resumed, n), n);
  EXPECT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, 0, &restored), -ENOENT);  // tickets are one-shot
}

// Holds the first write into one page of a shared mapping (a userfaultfd
// minor fault) until release(), or until 10 s passed, so that a test can
// see who is stuck there and what goes on meanwhile.
class FaultGate {
 public:
  // Empty reason: armed.
  std::string arm(uint8_t* page, uint64_t bytes) {
    page_ = page;
    bytes_ = bytes;
    fd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY));
    if (fd_ < 0) fd_ = static_cast<int>(::syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK));
    if (fd_ < 0) return std::string("userfaultfd: ") + std::strerror(errno);
    uffdio_api api{};
    api.api = UFFD_API;
    api.features = UFFD_FEATURE_MINOR_SHMEM;
    if (::ioctl(fd_, UFFDIO_API, &api) != 0) return std::string("UFFDIO_API minor-shmem: ") + std::strerror(errno);
    // The page stays in the memfd; only this mapping's PTEs go, so the next
    // access is a minor fault.
    if (::madvise(page, bytes, MADV_DONTNEED) != 0) return std::string("madvise: ") + std::strerror(errno);
    uffdio_register reg{};
    reg.range.start = reinterpret_cast<uint64_t>(page);
    reg.range.len = bytes;
    reg.mode = UFFDIO_REGISTER_MODE_MINOR;
    if (::ioctl(fd_, UFFDIO_REGISTER, &reg) != 0) return std::string("UFFDIO_REGISTER minor: ") + std::strerror(errno);
    thread_ = std::thread([this] { serve(); });
    return {};
  }
  ~FaultGate() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) ::close(fd_);
  }
  bool faulted() const { return faulted_; }
  bool timed_out() const { return timed_out_; }
  void release() { release_ = true; }

 private:
  void serve() {
    std::chrono::steady_clock::time_point since{};
    bool pending = false;
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 5) > 0) {
        uffd_msg msg{};
        while (::read(fd_, &msg, sizeof msg) == static_cast<ssize_t>(sizeof msg)) {
          if (msg.event != UFFD_EVENT_PAGEFAULT) continue;
          if (!pending) since = std::chrono::steady_clock::now();
          pending = true;
          faulted_ = true;
        }
      }
      if (pending && !release_ && std::chrono::steady_clock::now() - since > std::chrono::seconds(10)) {
        timed_out_ = true;
        release_ = true;
      }
      if (pending && release_) {
        uffdio_continue c{};
        c.range.start = reinterpret_cast<uint64_t>(page_);
        c.range.len = bytes_;
        (void)::ioctl(fd_, UFFDIO_CONTINUE, &c);  // EEXIST once mapped: fine
        pending = false;
      }
    }
  }

  uint8_t* page_ = nullptr;
  uint64_t bytes_ = 0;
  int fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false}, release_{false}, faulted_{false}, timed_out_{false};
};

TEST_F(KvArena, RestoreCopiesWhileAnotherRowSteps) {
  create();
  const auto ns = open_store();
  const uint32_t n = 6 * kChunk + 5;
  const auto toks = prompt(3, n);
  uint32_t seq[4] = {};
  uint32_t row = 0, other = 0;
  ASSERT_NO_FATAL_FAILURE(fill_new_row(n, seq, &row));
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &other), 0);
  ASSERT_NO_FATAL_FAILURE(offload_and_wait(ns, row, toks, n));
  clear_row(arena_, row, n);

  // The restore's first write (layer 0's K, token 0) stops in the gate.
  FaultGate gate;
  const std::string why = gate.arm(row_ptr(arena_, row, 0, CXLPOOL_ARENA_K), kPage);
  if (!why.empty()) GTEST_SKIP() << "no userfaultfd minor faults on shared memory here: " << why;
  uint64_t ticket = 0, done = 0;
  ASSERT_EQ(cxlpool_kv_arena_restore_begin(arena_, kv_, &ns, row, toks.data(), n, &ticket), 0) << cxlpool_last_error();
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!gate.faulted() && std::chrono::steady_clock::now() < give_up) {
    const int rc = cxlpool_kv_arena_offload_poll(arena_, ticket, 0, &done);
    ASSERT_EQ(rc, -EINPROGRESS) << cxlpool_last_error();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(gate.faulted()) << "the restore never wrote into the row";
  // The copy is held in the row; this thread steps another row (mapping
  // new pages) and polls, and neither waits for the copy.
  seq[other] = 3000;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0) << cxlpool_last_error();
  fill_row(arena_, other, 3000);
  EXPECT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, 0, &done), -EINPROGRESS);
  EXPECT_FALSE(gate.timed_out()) << "the copy ran on the caller's thread";
  gate.release();
  uint64_t restored = 0;
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &restored), 0) << cxlpool_last_error();
  EXPECT_FALSE(gate.timed_out());
  EXPECT_EQ(restored, n);
  EXPECT_EQ(matching_tokens(arena_, row, n), n);
  EXPECT_EQ(matching_tokens(arena_, other, 3000), 3000u);
}

TEST_F(KvArena, EvictedChunksRestoreAShorterPrefix) {
  create();
  const auto ns = open_store();
  const uint32_t n = 4 * kChunk + 3;
  const auto toks = prompt(2, n);
  uint32_t seq[4] = {};
  uint32_t row = 0;
  ASSERT_NO_FATAL_FAILURE(fill_new_row(n, seq, &row));
  ASSERT_NO_FATAL_FAILURE(offload_and_wait(ns, row, toks, n));

  // The store loses chunk 2 (of 0..3).
  std::vector<cxlpool_kv_key> keys(4);
  ASSERT_EQ(cxlpool_kv_compute_keys(&ns, toks.data(), n, nullptr, keys.data(), keys.size()), 4);
  ASSERT_EQ(cxlpool_kv_delete(kv_, ns.id, &keys[2], 1), 1);

  clear_row(arena_, row, n);
  uint64_t ticket = 0;
  ASSERT_EQ(cxlpool_kv_arena_restore_begin(arena_, kv_, &ns, row, toks.data(), n, &ticket), 0);
  uint64_t restored = 0;
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &restored), 0) << cxlpool_last_error();
  EXPECT_EQ(restored, 2u * kChunk);  // the caller recomputes from token 32
  EXPECT_EQ(matching_tokens(arena_, row, n), 2u * kChunk);
  // The row is mapped for all n tokens, ready for the recompute.
  seq[row] = n;
  const uint64_t maps = stats().maps;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  EXPECT_EQ(stats().maps, maps);
}

TEST_F(KvArena, BadRequestsAreRejected) {
  auto c = arena_config();
  c.dtype_bytes = 3;
  EXPECT_EQ(cxlpool_kv_arena_create(client_, &c, &arena_), -EINVAL);
  c = arena_config();
  c.tier_id = 4242;
  cxlpool_kv_arena* none = nullptr;
  ASSERT_EQ(cxlpool_kv_arena_create(client_, &c, &none), 0);  // the tier is used on first step
  uint32_t r = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(none, &r), 0);
  uint32_t seq[4] = {};
  seq[r] = 1;
  EXPECT_EQ(cxlpool_kv_arena_step(none, seq, 4), -ENOENT);
  cxlpool_kv_arena_destroy(none);
  create();
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &r), 0);
  std::memset(seq, 0, sizeof seq);
  seq[r] = 5000;
  EXPECT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), -ERANGE);
  seq[r] = 1;
  seq[(r + 1) % 4] = 1;
  EXPECT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), -ENOENT);
  EXPECT_EQ(cxlpool_kv_arena_free_reqid(arena_, (r + 1) % 4), -ENOENT);
  EXPECT_EQ(cxlpool_kv_arena_step(nullptr, seq, 4), -EINVAL);
  cxlpool_kv_arena_config cuda = arena_config();
  cuda.backend = CXLPOOL_ARENA_BACKEND_CUDA;
  cxlpool_kv_arena* gpu = nullptr;
  const int rc = cxlpool_kv_arena_create(client_, &cuda, &gpu);
  // Without a GPU (or without the cuda backend built): a clear refusal.
  if (rc == 0) {
    cxlpool_kv_arena_destroy(gpu);
  } else {
    EXPECT_LT(rc, 0);
    EXPECT_STRNE(cxlpool_last_error(), "");
  }
}

TEST_F(KvArena, CxxLayerOwnsTheArenaAndThrowsErrno) {
  auto c = kv_arena_config(kLayers, 2, 16, 2, 4, 4096);
  c.page_bytes = kPage;
  c.region_bytes = 1 << 20;
  cxlpool::KvArena arena(client_, c);
  const uint32_t r = arena.alloc_reqid();
  std::vector<uint32_t> seq(4, 0);
  seq[r] = 10;
  arena.step(seq);
  arena.row<uint16_t>(r, 1, CXLPOOL_ARENA_V)[9 * 32] = 0xBEEF;
  EXPECT_EQ(arena.stats().mapped_bytes, 4 * kPage);
  seq[r] = 5000;
  try {
    arena.step(seq);
    ADD_FAILURE() << "no exception";
  } catch (const std::system_error& e) {
    EXPECT_EQ(e.code().value(), ERANGE);
  }
  cxlpool::KvArena moved = std::move(arena);
  EXPECT_EQ(arena.get(), nullptr);
  moved.free_reqid(r);
  moved.trim();
  EXPECT_EQ(moved.stats().region_bytes, 0u);
}

// A device arena's rows go to the store and come back through the GPU's
// copy engine: KV put by a host arena is restored into device memory,
// offloaded from there under another prompt, and restored into a host row,
// where it must match the original bytes. Whole chunks only (a partial
// tail stays with the arena that offloaded it). Needs a GPU: skips without
// one, fails without one under CXLPOOL_REQUIRE_GPU.
TEST_F(KvArena, DeviceRowsOffloadAndRestoreByteExact) {
  cxlpool_kv_arena_config cuda = arena_config();
  cuda.backend = CXLPOOL_ARENA_BACKEND_CUDA;
  cuda.page_bytes = 2 << 20;  // the usual device mapping granularity
  cxlpool_kv_arena* gpu = nullptr;
  if (const int rc = cxlpool_kv_arena_create(client_, &cuda, &gpu); rc != 0) {
    const std::string why = std::string("no cuda KV arena here: ") + cxlpool_last_error();
    if (std::getenv("CXLPOOL_REQUIRE_GPU") != nullptr) FAIL() << why;
    GTEST_SKIP() << why;
  }
  std::unique_ptr<cxlpool_kv_arena, void (*)(cxlpool_kv_arena*)> own(gpu, cxlpool_kv_arena_destroy);
  create();
  const auto ns = open_store();
  const uint32_t n = 6 * kChunk;
  const auto first = prompt(11, n);
  const auto second = prompt(12, n);
  uint32_t seq[4] = {};
  uint32_t row = 0;
  ASSERT_NO_FATAL_FAILURE(fill_new_row(n, seq, &row));
  ASSERT_NO_FATAL_FAILURE(offload_and_wait(ns, row, first, n));

  // Into device memory, then out again under the second prompt.
  uint32_t dev_row = 0, dev_seq[4] = {};
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(gpu, &dev_row), 0);
  uint64_t ticket = 0, moved = 0;
  ASSERT_EQ(cxlpool_kv_arena_restore_begin(gpu, kv_, &ns, dev_row, first.data(), n, &ticket), 0)
      << cxlpool_last_error();
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(gpu, ticket, -1, &moved), 0) << cxlpool_last_error();
  ASSERT_EQ(moved, n);
  dev_seq[dev_row] = n;
  ASSERT_EQ(cxlpool_kv_arena_step(gpu, dev_seq, 4), 0);
  ASSERT_EQ(cxlpool_kv_arena_offload_begin(gpu, kv_, &ns, dev_row, second.data(), n, &ticket), 0)
      << cxlpool_last_error();
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(gpu, ticket, -1, &moved), 0) << cxlpool_last_error();
  ASSERT_EQ(moved, n);

  // Back on the host: the original bytes.
  uint32_t back = 0;
  ASSERT_EQ(cxlpool_kv_arena_alloc_reqid(arena_, &back), 0);
  seq[back] = n;
  ASSERT_EQ(cxlpool_kv_arena_step(arena_, seq, 4), 0);
  clear_row(arena_, back, n);
  ASSERT_EQ(cxlpool_kv_arena_restore_begin(arena_, kv_, &ns, back, second.data(), n, &ticket), 0)
      << cxlpool_last_error();
  ASSERT_EQ(cxlpool_kv_arena_offload_poll(arena_, ticket, -1, &moved), 0) << cxlpool_last_error();
  EXPECT_EQ(moved, n);
  EXPECT_EQ(matching_tokens(arena_, back, n), n);
}

// Offloading chunks the store already holds writes nothing, and still ends
// the put reservation (an open one holds put-window slots and counts
// against the client's reservation limit until the connection closes).
TEST_F(KvArena, OffloadOfStoredChunksEndsItsReservations) {
  create();
  const auto ns = open_store();
  const uint32_t n = 5 * kChunk;
  const auto toks = prompt(3, n);
  uint32_t seq[4] = {};
  uint32_t row = 0;
  ASSERT_NO_FATAL_FAILURE(fill_new_row(n, seq, &row));
  ASSERT_NO_FATAL_FAILURE(offload_and_wait(ns, row, toks, n));
  ASSERT_NO_FATAL_FAILURE(offload_and_wait(ns, row, toks, n));  // every chunk cached
  cxlpool_stat all[512];
  const int count = cxlpool_stats(client_, all, 512);
  ASSERT_GT(count, 0) << cxlpool_last_error();
  bool seen = false;
  for (int i = 0; i < count && i < 512; ++i) {
    if (std::string(all[i].name) != "kv.reservations") continue;
    seen = true;
    EXPECT_EQ(all[i].value, 0u);
  }
  EXPECT_TRUE(seen) << "no kv.reservations counter";
}

}  // namespace
}  // namespace cxlpool::integration
