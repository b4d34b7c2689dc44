// SPDX-License-Identifier: Apache-2.0
// Expected outcomes cost no allocation: a miss in the chunk index or the
// SSD log, a refused put, an unknown lease answered by the store. This
// binary counts every call of the global operator new (replaced below, for
// this test program only) around such calls.
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "../kv_status_print.hpp"
#include "cxlpool/kvcache/index.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "posix_block_device.hpp"

namespace {

std::atomic<std::uint64_t> g_allocations{0};

}  // namespace

void* operator new(std::size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace cxlpool::kvcache {
namespace {

// Allocations made by `fn`.
template <typename Fn>
std::uint64_t allocations_in(Fn&& fn) {
  const std::uint64_t before = g_allocations.load(std::memory_order_relaxed);
  fn();
  return g_allocations.load(std::memory_order_relaxed) - before;
}

// One data-path call, the status it must answer and what it stands for.
struct StatusCall {
  const char* what;
  KvStatus want;
  std::function<KvStatus()> run;
};

// Makes every call, in order, with the allocation counter watching (the
// calls are built and the statuses' room taken before it starts); none may
// allocate, and each must answer its status.
void expect_no_alloc(std::initializer_list<StatusCall> calls) {
  std::vector<KvStatus> got(calls.size(), KvStatus::kOk);
  const std::uint64_t n = allocations_in([&] {
    std::size_t i = 0;
    for (const StatusCall& c : calls) got[i++] = c.run();
  });
  EXPECT_EQ(n, 0u);
  std::size_t i = 0;
  for (const StatusCall& c : calls) EXPECT_EQ(got[i++], c.want) << c.what;
}

ChunkKey key_of(std::uint64_t i) { return ChunkKey{i + 1, i * 31 + 7}; }

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte, FreeDeleter>;

// 4096-aligned, as O_DIRECT reads and the store's arenas want them.
AlignedBytes aligned_bytes(std::size_t n) { return AlignedBytes(static_cast<std::byte*>(std::aligned_alloc(4096, n))); }

TEST(NoAlloc, TheCounterSeesAllocations) {
  EXPECT_GE(allocations_in([] { auto s = std::make_unique<std::string>(100, 'x'); }), 1u);
}

TEST(NoAlloc, IndexMissesAndRefusals) {
  ChunkIndex idx(4);
  for (std::uint64_t i = 0; i < 4; ++i) ASSERT_EQ(idx.insert(key_of(i), ChunkInfo{}), KvStatus::kOk);
  ASSERT_TRUE(idx.pin(key_of(0)));
  expect_no_alloc({
      {"full", KvStatus::kRejected, [&] { return idx.insert(key_of(9), ChunkInfo{}); }},
      {"present", KvStatus::kBadState, [&] { return idx.insert(key_of(1), ChunkInfo{}); }},
      {"busy", KvStatus::kBusy, [&] { return idx.update(key_of(0), ChunkInfo{}); }},
      {"gone", KvStatus::kNotFound, [&] { return idx.update(key_of(9), ChunkInfo{}); }},
      {"pin miss", KvStatus::kNotFound, [&] { return idx.pin(key_of(9)).status(); }},
      {"unpin miss", KvStatus::kNotFound, [&] { return idx.unpin(key_of(9)).status(); }},
      {"unpinned", KvStatus::kBadState, [&] { return idx.unpin(key_of(1)).status(); }},
  });
}

TEST(NoAlloc, SsdLogMissesAndRefusals) {
  constexpr std::uint32_t kRegion = 64 * 1024;
  const std::string path =
      std::string(CXLPOOL_STORE_TEST_DIR) + "/noalloc_" + std::to_string(::getpid()) + ".img";
  ::unlink(path.c_str());
  hal::BlockOpenOptions options;
  options.create = true;
  options.truncate_to = 4 * kRegion;
  auto dev = drivers::open_posix_block_device(path, options);
  if (!dev && dev.error().code == EINVAL) GTEST_SKIP() << dev.error().message;  // no O_DIRECT here
  ASSERT_TRUE(dev) << dev.error().message;
  SsdStoreConfig config;
  config.region_bytes = kRegion;
  config.index_capacity = 1;
  auto opened = SsdStore::open(std::move(*dev), config);
  ASSERT_TRUE(opened) << opened.error().message;
  SsdStore& store = **opened;
  const std::vector<std::byte> small(100, std::byte{1});
  const std::vector<std::byte> big(kRegion, std::byte{2});
  ASSERT_EQ(store.put(key_of(0), NamespaceFingerprint{1, 2}, small).outcome, KvStatus::kOk);
  const AlignedBytes buffer = aligned_bytes(kRegion);
  ASSERT_NE(buffer, nullptr);

  expect_no_alloc({
      {"miss", KvStatus::kNotFound, [&] { return store.get(key_of(5), {buffer.get(), kRegion}).status(); }},
      {"bad buffer", KvStatus::kInvalid, [&] { return store.get(key_of(0), {buffer.get(), 64}).status(); }},
      {"erase miss", KvStatus::kNotFound, [&] { return store.erase(key_of(5)).status; }},
      {"too large", KvStatus::kTooLarge, [&] { return store.put(key_of(6), NamespaceFingerprint{1, 2}, big).status(); }},
      // The index is full and the region open.
      {"rejected", KvStatus::kRejected,
       [&] { return store.put(key_of(7), NamespaceFingerprint{1, 2}, small).status(); }},
  });
  opened->reset();
  ::unlink(path.c_str());
}

// A lookup that misses, a get of nothing and the release of an unknown
// lease, answered through submit and poll with the caller's vector reused.
TEST(NoAlloc, StoreAnswersMissesAndUnknownLeasesWithoutAllocating) {
  constexpr std::uint64_t kSlot = 16 * 1024;
  const AlignedBytes dram = aligned_bytes(4 * kSlot);
  ASSERT_NE(dram, nullptr);
  KvStoreConfig config;
  config.slot_bytes = kSlot;
  config.index_capacity = 64;
  config.admission.width = 64;
  auto created = KvStore::create(config, KvArenas{{dram.get(), 4 * kSlot}, {}, nullptr}, nullptr);
  ASSERT_TRUE(created) << created.error().message;
  KvStore& store = **created;
  ASSERT_TRUE(store.add_client(1, {}));
  NamespaceSpec spec;
  spec.model_id = "m";
  spec.layout = "l";
  spec.dtype = "bf16";
  auto ns = store.open_namespace(spec);
  ASSERT_TRUE(ns);
  const std::vector<proto::KvKey> keys{{11, 12}, {13, 14}};
  std::vector<KvStoreCompletion> out;
  std::vector<KvStatus> seen;
  seen.reserve(64);
  auto round = [&](std::uint64_t id) {
    proto::KvRequest r;
    r.namespace_id = *ns;
    r.request_id = id;
    r.op = static_cast<std::uint8_t>(proto::KvOp::kLookup);
    store.submit(1, r, keys);
    r.op = static_cast<std::uint8_t>(proto::KvOp::kGet);
    store.submit(1, r, keys);
    r.op = static_cast<std::uint8_t>(proto::KvOp::kRelease);
    r.param0 = 777;
    store.submit(1, r, {});
    store.poll(out);
    for (const KvStoreCompletion& c : out) seen.push_back(c.outcome.status);
    out.clear();
  };
  round(1);  // the completion vectors grow once
  round(2);
  seen.clear();
  const std::uint64_t n = allocations_in([&] {
    for (std::uint64_t i = 3; i < 10; ++i) round(i);
  });
  EXPECT_EQ(n, 0u);
  ASSERT_EQ(seen.size(), 21u);
  for (std::size_t i = 0; i < seen.size(); i += 3) {
    EXPECT_EQ(seen[i], KvStatus::kOk) << "lookup miss";
    EXPECT_EQ(seen[i + 1], KvStatus::kOk) << "get of nothing";
    EXPECT_EQ(seen[i + 2], KvStatus::kNotFound) << "unknown lease";
  }
}

}  // namespace
}  // namespace cxlpool::kvcache
