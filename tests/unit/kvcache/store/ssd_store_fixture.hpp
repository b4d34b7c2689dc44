// SPDX-License-Identifier: Apache-2.0
// The SsdStore tests' fixture: a store over either block driver (optionally
// behind the fault-injecting double) on a file in the build tree, entries of
// a known shape, and helpers that damage the file behind the store's back.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/block_workers.hpp"
#include "cxlpool/kvcache/ssd_store.hpp"
#include "../kv_status_print.hpp"
#include "support/faulty_block_device.hpp"
#include "file_damage.hpp"

namespace cxlpool::kvcache::ssd_test {

using cxlpool::testing::FaultPlan;  // what open_faulty and open_held take

constexpr std::uint32_t kRegion = 64 * 1024;
constexpr std::uint32_t kRegions = 16;
// 9000 bytes: extent 16 KiB, so a 64 KiB region holds 3 entries.
constexpr std::uint32_t kPayload = 9000;
constexpr std::uint32_t kEntriesPerRegion = 3;

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<std::byte, AlignedFree>;

inline Buffer aligned_buffer(std::size_t bytes) {
  return Buffer(static_cast<std::byte*>(std::aligned_alloc(kSsdBlockBytes, bytes)));
}

inline ChunkKey key_of(std::uint64_t i) { return ChunkKey{i + 1, i * 7919 + 3}; }
const NamespaceFingerprint kNs{0xABCD, 0x1234};

inline std::vector<std::byte> payload_of(std::uint64_t i, std::uint32_t bytes = kPayload) {
  std::vector<std::byte> p(bytes);
  for (std::size_t b = 0; b < bytes; ++b) p[b] = static_cast<std::byte>((i * 131 + b * 7 + (b >> 8)) & 0xff);
  return p;
}

// Device offset of entry number n (0-based, in put order) when every entry
// is kPayload bytes and nothing was evicted or flushed early.
inline std::uint64_t entry_offset(std::uint32_t n) {
  return std::uint64_t{n / kEntriesPerRegion} * kRegion + kSsdBlockBytes +
         (n % kEntriesPerRegion) * entry_extent(kPayload);
}

// kUringWorkers1/4: uring queues behind hal::make_worker_block_device, one
// or four worker threads (the daemon's kvstore.ssd_workers).
enum class Driver { kPosix, kUring, kUringWorkers1, kUringWorkers4 };

inline std::string driver_name(const ::testing::TestParamInfo<Driver>& info) {
  switch (info.param) {
    case Driver::kPosix: return "posix";
    case Driver::kUring: return "uring";
    case Driver::kUringWorkers1: return "uring_workers1";
    case Driver::kUringWorkers4: return "uring_workers4";
  }
  return "unknown";
}

inline std::uint32_t worker_count(Driver driver) {
  return driver == Driver::kUringWorkers1 ? 1 : driver == Driver::kUringWorkers4 ? 4 : 0;
}

// Every driver the SSD store tests run over.
inline auto all_drivers() {
  return ::testing::Values(Driver::kPosix, Driver::kUring, Driver::kUringWorkers1, Driver::kUringWorkers4);
}

class SsdStoreTest : public ::testing::TestWithParam<Driver> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) if (c == '/') c = '_';
    path_ = std::string(CXLPOOL_STORE_TEST_DIR) + "/ssdstore_" + std::to_string(::getpid()) + "_" + name + ".img";
    ::unlink(path_.c_str());
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  // The driver under test on the test file; null with skip_ set when this
  // host refuses the driver or O_DIRECT.
  std::unique_ptr<hal::BlockDevice> device(std::uint32_t queue_depth = 32) {
    hal::BlockOpenOptions options;
    options.create = true;
    options.truncate_to = std::uint64_t{kRegion} * kRegions;
    options.queue_depth = queue_depth;
    // ENOTSUP: the driver is not compiled in (or CXLPOOL_BACKENDS excludes it).
    const std::uint32_t workers = worker_count(GetParam());
    auto dev = hal::open_block_device(GetParam() == Driver::kPosix ? "posix" : "uring", path_, options);
    if (dev && workers > 0) {
      // The other queues open the file the first one created and sized.
      options.create = false;
      options.truncate_to = 0;
      std::vector<std::unique_ptr<hal::BlockDevice>> queues;
      queues.push_back(std::move(*dev));
      while (dev && queues.size() < workers) {
        dev = hal::open_block_device("uring", path_, options);
        if (dev) queues.push_back(std::move(*dev));
      }
      if (dev) dev = hal::make_worker_block_device(std::move(queues), &ssd_read_digest);
    }
    if (!dev) {
      const bool refused = (GetParam() != Driver::kPosix && (dev.error().code == ENOSYS || dev.error().code == EPERM ||
                                                            dev.error().code == ENOTSUP)) ||
                           dev.error().code == EINVAL;
      if (refused) {
        skip_ = dev.error().message;
      } else {
        ADD_FAILURE() << dev.error().message;
      }
      return nullptr;
    }
    return std::move(*dev);
  }

  std::unique_ptr<SsdStore> open_store(std::unique_ptr<hal::BlockDevice> dev, SsdSyncPolicy sync,
                                       std::uint32_t max_regions = 0, std::size_t index_capacity = 1u << 20,
                                       std::uint32_t write_buffers = 4) {
    if (!dev) return nullptr;
    SsdStoreConfig config;
    config.region_bytes = kRegion;
    config.sync = sync;
    config.max_regions = max_regions;
    config.index_capacity = index_capacity;
    config.write_buffers = write_buffers;
    auto store = SsdStore::open(std::move(dev), config);
    if (!store) {
      ADD_FAILURE() << store.error().message;
      return nullptr;
    }
    return std::move(*store);
  }

  // A store over the driver behind the fault-injecting double (kept in
  // faulty_), which applies `plan`.
  std::unique_ptr<SsdStore> open_faulty(const FaultPlan& plan, SsdSyncPolicy sync,
                                        std::uint32_t write_buffers = 4) {
    auto real = device();
    if (!real) return nullptr;
    auto owner = std::make_unique<cxlpool::testing::FaultyBlockDevice>(std::move(real), plan);
    faulty_ = owner.get();
    return open_store(std::move(owner), sync, 0, 1u << 20, write_buffers);
  }
  // A per-region store whose device holds write completions back until the
  // test releases them (and applies the rest of `plan`).
  std::unique_ptr<SsdStore> open_held(FaultPlan plan = {}, std::uint32_t write_buffers = 4) {
    plan.hold_write_completions = true;
    return open_faulty(plan, SsdSyncPolicy::kPerRegion, write_buffers);
  }

  // Reaps without waiting (held writes stay held) until `done` or 2 s.
  template <typename Done>
  void poll_until(SsdStore& store, Done done) {
    std::vector<SsdGetCompletion> out(8);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      ASSERT_TRUE(store.poll_gets(out, 0, std::chrono::nanoseconds(0)));
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(done());
  }

  // Puts entries [first, end), each of the standard shape (key_of, payload_of).
  void put_entries(SsdStore& store, std::uint32_t first, std::uint32_t end) {
    for (std::uint32_t i = first; i < end; ++i) ASSERT_TRUE(store.put(key_of(i), kNs, payload_of(i))) << "entry " << i;
  }

  // Puts entries [0, end) and flushes them: gets then read the device.
  void put_on_device(SsdStore& store, std::uint32_t end) {
    ASSERT_NO_FATAL_FAILURE(put_entries(store, 0, end));
    ASSERT_TRUE(store.flush());
  }

  // Overwrites bytes of the test file behind the store's back.
  void scribble(std::uint64_t offset, std::size_t length, std::byte value) {
    const int fd = ::open(path_.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    std::vector<std::byte> bytes(length, value);
    ASSERT_EQ(::pwrite(fd, bytes.data(), length, static_cast<off_t>(offset)), static_cast<ssize_t>(length));
    ASSERT_EQ(::fsync(fd), 0);
    ::close(fd);
  }
  // Damages byte `at` of entry n's payload (laid out as entry_offset says).
  void flip_payload_byte(std::uint32_t n, std::uint32_t at) {
    flip_file_byte(path_, entry_offset(n) + kSsdBlockBytes + at);
  }

  // get() of entry i must return exactly its payload.
  void expect_entry(SsdStore& store, std::uint64_t i, std::uint32_t bytes = kPayload) {
    Buffer buf = aligned_buffer(kRegion);
    auto got = store.get(key_of(i), {buf.get(), kRegion});
    ASSERT_EQ(got.outcome, KvStatus::kOk) << "entry " << i;
    ASSERT_EQ(*got, bytes) << "entry " << i;
    const auto want = payload_of(i, bytes);
    EXPECT_EQ(std::memcmp(buf.get(), want.data(), bytes), 0) << "entry " << i;
  }

  std::string path_;
  std::string skip_;
  cxlpool::testing::FaultyBlockDevice* faulty_ = nullptr;  // set by open_faulty
};

#define STORE_OR_SKIP(var, expr)                   \
  auto var = (expr);                               \
  if (!var && !skip_.empty()) GTEST_SKIP() << skip_; \
  ASSERT_NE(var, nullptr)

}  // namespace cxlpool::kvcache::ssd_test
