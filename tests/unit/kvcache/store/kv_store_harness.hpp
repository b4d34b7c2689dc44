// SPDX-License-Identifier: Apache-2.0
// A KvStore over heap arenas, put windows and (optionally) an SSD log on a
// file in the build tree through a real block driver, with helpers that
// submit one request and poll until its completion comes back.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "../kv_status_print.hpp"
#include "support/faulty_block_device.hpp"
#include "file_damage.hpp"

namespace cxlpool::kvcache::testing {

inline constexpr std::uint64_t kSlot = 16 * 1024;
inline constexpr std::uint32_t kChunk = 10000;  // bytes per test chunk (<= kSlot)
inline constexpr KvClientId kAlice = 1;
inline constexpr KvClientId kBob = 2;

enum class Driver { kPosix, kUring };

inline std::string driver_name(const ::testing::TestParamInfo<Driver>& info) {
  return info.param == Driver::kPosix ? "posix" : "uring";
}

struct HarnessOptions {
  std::size_t dram_slots = 8;
  std::size_t cxl_slots = 0;
  std::size_t window_slots = 16;
  bool ssd = false;
  Driver driver = Driver::kPosix;
  SsdSyncPolicy sync = SsdSyncPolicy::kPerRegion;
  std::uint32_t ssd_regions = 16;
  std::uint32_t region_bytes = 256 * 1024;  // 15 test chunks
  bool faulty = false;
  cxlpool::testing::FaultPlan fault;
  bool one_account = false;  // Alice and Bob share one quota account (one uid)
  // The put windows are shared with the store (add_client's window_owner),
  // which may then lend their slots to the SSD log.
  bool window_owners = false;
  KvStoreConfig config = default_config();
  KvSlotMemory* memory = nullptr;  // per-namespace views; null: the arenas

  static KvStoreConfig default_config() {
    KvStoreConfig c;
    c.slot_bytes = kSlot;
    c.index_capacity = 4096;
    c.admission.width = 4096;
    c.commit_workers = commit_workers_from_env();
    return c;
  }
  // The suite runs twice (meson.build): commits copying on the caller's
  // thread, and on commit workers (CXLPOOL_TEST_COMMIT_WORKERS).
  static std::uint32_t commit_workers_from_env() {
    const char* v = std::getenv("CXLPOOL_TEST_COMMIT_WORKERS");
    return v != nullptr ? static_cast<std::uint32_t>(std::strtoul(v, nullptr, 10)) : 0;
  }
};

// An SSD log on `driver` that admits every chunk demoted to it.
inline HarnessOptions ssd_options(Driver driver, std::size_t dram_slots) {
  HarnessOptions o;
  o.dram_slots = dram_slots;
  o.ssd = true;
  o.driver = driver;
  o.config.admission.threshold = 1;
  return o;
}

// Whole 4 KiB blocks, so a chunk's DRAM slot can be lent to its SSD write;
// a 64 KiB region holds 3.
inline constexpr std::uint32_t kBlockChunk = 12288;

// Four DRAM slots (two may be lent at a time) over an SSD log of 64 KiB
// regions that writes kBlockChunk demotions straight from their slots.
inline HarnessOptions lending_options(Driver driver = Driver::kPosix) {
  HarnessOptions o = ssd_options(driver, 4);
  o.region_bytes = 64 * 1024;
  o.config.ssd_lend_min_bytes = 4096;
  return o;
}

// `o` over the fault-injecting device, failing the nth data operation after
// the open's region-header reads (one per region).
inline HarnessOptions failing_after_open(HarnessOptions o, std::uint64_t nth) {
  o.faulty = true;
  o.fault.fail_nth_op = o.ssd_regions + nth;
  return o;
}

// `o` over the fault-injecting device, holding every write completion back.
inline HarnessOptions holding_writes(HarnessOptions o) {
  o.faulty = true;
  o.fault.hold_write_completions = true;
  return o;
}

struct AlignedFree {
  void operator()(std::byte* p) const { std::free(p); }
};

class Area {
 public:
  Area() = default;
  explicit Area(std::size_t bytes)
      : bytes_(bytes), p_(bytes ? static_cast<std::byte*>(std::aligned_alloc(4096, bytes)) : nullptr) {
    if (p_) std::memset(p_.get(), 0, bytes);
  }
  std::span<std::byte> span() const { return {p_.get(), bytes_}; }
  std::byte* data() const { return p_.get(); }

 private:
  std::size_t bytes_ = 0;
  std::unique_ptr<std::byte, AlignedFree> p_;
};

inline NamespaceSpec test_spec(const std::string& model = "test-model") {
  NamespaceSpec s;
  s.model_id = model;
  s.layout = "test-layout";
  s.dtype = "bf16";
  return s;
}

// Keys of one synthetic sequence: `seq` tells sequences apart.
inline std::vector<proto::KvKey> keys_of(std::uint64_t seq, std::size_t n, std::size_t first = 0) {
  std::vector<proto::KvKey> keys;
  for (std::size_t i = first; i < first + n; ++i) keys.push_back(proto::KvKey{seq * 1000003 + i + 1, seq + 77});
  return keys;
}

inline std::vector<std::byte> payload_of(const proto::KvKey& k, std::uint32_t bytes = kChunk) {
  std::vector<std::byte> p(bytes);
  for (std::uint32_t b = 0; b < bytes; ++b) p[b] = static_cast<std::byte>((k.lo * 131 + k.hi * 17 + b * 7 + (b >> 8)) & 0xff);
  return p;
}

class KvHarness {
 public:
  // Empty when the store is up; else why this host cannot run the case
  // (test failures are reported through gtest).
  std::string open(const HarnessOptions& o) {
    options_ = o;
    if (o.ssd && path_.empty()) {
      std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
      for (char& c : name) if (c == '/') c = '_';
      path_ = std::string(CXLPOOL_STORE_TEST_DIR) + "/kvstore_" + std::to_string(::getpid()) + "_" + name + ".img";
      ::unlink(path_.c_str());
    }
    return start();
  }
  // Drops the store as a crash would (no flush) and starts a new one on the
  // same SSD file with fresh arenas.
  std::string restart() {
    store_.reset();
    return start();
  }
  ~KvHarness() {
    store_.reset();
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  KvStore& store() { return *store_; }
  bool up() const { return store_ != nullptr; }
  std::uint32_t ns() const { return ns_; }
  cxlpool::testing::FaultyBlockDevice* faulty() { return faulty_; }
  const std::string& path() const { return path_; }
  // Completions the store answered with status `s`.
  std::uint64_t outcome_count(KvStatus s) { return store_->counters().outcomes[static_cast<std::size_t>(s)]; }
  // Damages one byte of the SSD log's file, as a failing disk would.
  void flip_ssd_byte(std::uint64_t offset) { ssd_test::flip_file_byte(path_, offset); }

  std::byte* arena(std::uint16_t tier) { return tier == 0 ? dram_.data() : cxl_.data(); }
  std::byte* window(KvClientId c) {
    const std::shared_ptr<Area>& owned = c == kAlice ? owned_a_ : owned_b_;
    if (owned) return owned->data();
    return c == kAlice ? window_a_.data() : window_b_.data();
  }
  // With window_owners: drops the harness's reference to the client's
  // window (as the daemon does when a client goes); the store's keeps it
  // alive while it needs it, which the returned pointer tells.
  std::weak_ptr<Area> forget_window(KvClientId c) {
    std::shared_ptr<Area>& owned = c == kAlice ? owned_a_ : owned_b_;
    std::weak_ptr<Area> seen = owned;
    owned.reset();
    return seen;
  }

  // Submits one request and polls until its completion is back.
  KvStoreCompletion call(KvClientId client, proto::KvOp op, std::span<const proto::KvKey> keys,
                         std::uint64_t param0 = 0, std::uint64_t param1 = 0, std::uint16_t flags = 0,
                         std::uint64_t ns = UINT64_MAX) {
    const std::uint64_t id = submit(client, op, keys, param0, param1, flags, ns);
    return wait(client, id);
  }
  std::uint64_t submit(KvClientId client, proto::KvOp op, std::span<const proto::KvKey> keys,
                       std::uint64_t param0 = 0, std::uint64_t param1 = 0, std::uint16_t flags = 0,
                       std::uint64_t ns = UINT64_MAX) {
    proto::KvRequest r;
    r.request_id = ++next_id_;
    r.op = static_cast<std::uint8_t>(op);
    r.flags = flags;
    r.count = static_cast<std::uint32_t>(keys.size());
    r.namespace_id = ns == UINT64_MAX ? ns_ : ns;
    r.param0 = param0;
    r.param1 = param1;
    EXPECT_TRUE(proto::kv_request_well_formed(r)) << "test bug: malformed request";
    store_->submit(client, r, keys);
    return r.request_id;
  }
  KvStoreCompletion wait(KvClientId client, std::uint64_t id) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      for (auto it = stray_.begin(); it != stray_.end(); ++it) {
        if (it->client == client && it->completion.request_id == id) {
          KvStoreCompletion c = std::move(*it);
          stray_.erase(it);
          return c;
        }
      }
      std::vector<KvStoreCompletion> out;
      const std::size_t n = store_->poll(out);
      stray_.insert(stray_.end(), std::make_move_iterator(out.begin()), std::make_move_iterator(out.end()));
      if (n == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ADD_FAILURE() << "no completion for request " << id;
          KvStoreCompletion none;
          none.outcome = KvOutcome::device_error(ETIMEDOUT);
          return none;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }
  // Completions polled but not asked for yet.
  std::vector<KvStoreCompletion>& stray() { return stray_; }

  // put_begin, write every slot not already cached, commit them all.
  // Returns the commit's completion (or put_begin's when that failed).
  KvStoreCompletion put(KvClientId client, std::span<const proto::KvKey> keys, std::uint32_t bytes = kChunk,
                        std::uint64_t ns = UINT64_MAX) {
    KvStoreCompletion begin = call(client, proto::KvOp::kPutBegin, keys, bytes, 0, 0, ns);
    if (!begin.outcome.ok()) return begin;
    EXPECT_EQ(begin.locations.size(), keys.size());
    for (std::size_t i = 0; i < begin.locations.size(); ++i) {
      const proto::KvLocation& loc = begin.locations[i];
      EXPECT_EQ(loc.tier, proto::kKvLocationPutWindow);
      if (loc.flags & proto::kKvLocationCached) continue;
      const auto p = payload_of(keys[i], bytes);
      std::memcpy(window(client) + loc.offset, p.data(), bytes);
    }
    return call(client, proto::KvOp::kPutCommit, keys, begin.completion.result0, 0, 0, ns);
  }

  // Puts `keys` one by one, each committed on its own.
  void put_each(KvClientId client, std::span<const proto::KvKey> keys, std::uint32_t bytes = kChunk) {
    for (const auto& k : keys) ASSERT_EQ(put(client, {&k, 1}, bytes).completion.result0, 1u);
  }

  // Polls until no SSD I/O is in flight, handing out the write completions a
  // faulty device holds back; what is polled meanwhile waits in stray().
  void drain() {
    for (int i = 0; i < 20000 && store_->io_in_flight() != 0; ++i) {
      if (faulty_ != nullptr) {
        while (faulty_->held() != 0) faulty_->release_held(0);
      }
      std::vector<KvStoreCompletion> out;
      store_->poll(out);
      for (auto& c : out) stray_.push_back(std::move(c));
      ::usleep(50);
    }
    ASSERT_EQ(store_->io_in_flight(), 0u);
  }

  // Gets `key` alone, checks its bytes and releases the lease; false when
  // the get served nothing.
  bool get_checked(KvClientId client, const proto::KvKey& key, std::uint32_t bytes = kChunk) {
    auto get = call(client, proto::KvOp::kGet, {&key, 1});
    EXPECT_EQ(get.outcome, KvStatus::kOk);
    if (get.completion.result1 != 1) return false;
    EXPECT_TRUE(holds(get.locations[0], key, bytes));
    EXPECT_EQ(call(client, proto::KvOp::kRelease, {}, get.completion.result0).outcome, KvStatus::kOk);
    return true;
  }

  // The bytes a location points at equal the key's payload.
  ::testing::AssertionResult holds(const proto::KvLocation& loc, const proto::KvKey& key,
                                   std::uint32_t bytes = kChunk) {
    if (loc.tier > 1) return ::testing::AssertionFailure() << "tier " << loc.tier << " is not mapped";
    if (loc.length != bytes) return ::testing::AssertionFailure() << "length " << loc.length;
    const auto p = payload_of(key, bytes);
    if (std::memcmp(arena(loc.tier) + loc.offset, p.data(), bytes) != 0) {
      return ::testing::AssertionFailure() << "bytes differ at tier " << loc.tier << " offset " << loc.offset;
    }
    return ::testing::AssertionSuccess();
  }

  // No DRAM slot was lost: new chunks (keys_of(seq, ...), put by `client`)
  // fill every DRAM slot the arena has free, and all of them are then held
  // at once, none evicted. A lost slot leaves one short.
  ::testing::AssertionResult dram_slots_all_back(KvClientId client, std::uint64_t seq, std::uint32_t bytes = kChunk) {
    const std::uint64_t held = store_->counters().tiers[0].chunks;
    if (held > options_.dram_slots) {
      return ::testing::AssertionFailure() << held << " DRAM chunks in " << options_.dram_slots << " slots";
    }
    const auto more = keys_of(seq, options_.dram_slots - held);
    put_each(client, more, bytes);
    for (const auto& k : more) {  // a get also waits for a copy behind the answer
      if (!get_checked(kBob, k, bytes)) return ::testing::AssertionFailure() << "a new chunk is not served";
    }
    const std::uint64_t now = store_->counters().tiers[0].chunks;
    if (now != options_.dram_slots) {
      return ::testing::AssertionFailure() << now << " of " << options_.dram_slots << " DRAM slots hold chunks after "
                                           << more.size() << " were put into the free ones";
    }
    return ::testing::AssertionSuccess();
  }

  // Tier of each chunk of the cached prefix (lookup).
  std::vector<std::uint16_t> tiers(std::span<const proto::KvKey> keys) {
    auto c = call(kAlice, proto::KvOp::kLookup, keys);
    std::vector<std::uint16_t> t;
    for (const auto& l : c.locations) t.push_back(l.tier);
    return t;
  }

 private:
  std::string start() {
    const HarnessOptions& o = options_;
    const std::uint64_t slot = o.config.slot_bytes;
    dram_ = Area(o.dram_slots * slot);
    cxl_ = Area(o.cxl_slots * slot);
    window_a_ = Area(o.window_slots * slot);
    window_b_ = Area(o.window_slots * slot);
    owned_a_.reset();
    owned_b_.reset();
    if (o.window_owners) {
      owned_a_ = std::make_shared<Area>(o.window_slots * slot);
      owned_b_ = std::make_shared<Area>(o.window_slots * slot);
    }
    std::unique_ptr<SsdStore> ssd;
    faulty_ = nullptr;
    if (o.ssd) {
      hal::BlockOpenOptions bo;
      bo.create = true;
      bo.truncate_to = std::uint64_t{o.region_bytes} * o.ssd_regions;
      // ENOTSUP: the driver is not compiled in (or CXLPOOL_BACKENDS excludes it).
      auto dev = hal::open_block_device(o.driver == Driver::kPosix ? "posix" : "uring", path_, bo);
      if (!dev) {
        if (dev.error().code == ENOSYS || dev.error().code == EPERM || dev.error().code == EINVAL ||
            dev.error().code == ENOTSUP) {
          return dev.error().message;
        }
        ADD_FAILURE() << dev.error().message;
        return {};
      }
      std::unique_ptr<hal::BlockDevice> device = std::move(*dev);
      if (o.faulty) {
        auto f = std::make_unique<cxlpool::testing::FaultyBlockDevice>(std::move(device), o.fault);
        faulty_ = f.get();
        device = std::move(f);
      }
      SsdStoreConfig sc;
      sc.region_bytes = o.region_bytes;
      sc.sync = o.sync;
      auto opened = SsdStore::open(std::move(device), sc);
      if (!opened) {
        ADD_FAILURE() << opened.error().message;
        return {};
      }
      ssd = std::move(*opened);
    }
    auto created = KvStore::create(o.config, KvArenas{dram_.span(), cxl_.span(), o.memory}, std::move(ssd));
    if (!created) {
      ADD_FAILURE() << created.error().message;
      return {};
    }
    store_ = std::move(*created);
    if (o.window_owners) {
      EXPECT_TRUE(store_->add_client(kAlice, owned_a_->span(), o.one_account ? 1000 : 1, owned_a_));
      EXPECT_TRUE(store_->add_client(kBob, owned_b_->span(), o.one_account ? 1000 : 2, owned_b_));
    } else if (o.one_account) {
      EXPECT_TRUE(store_->add_client(kAlice, window_a_.span(), 1000));
      EXPECT_TRUE(store_->add_client(kBob, window_b_.span(), 1000));
    } else {
      EXPECT_TRUE(store_->add_client(kAlice, window_a_.span()));
      EXPECT_TRUE(store_->add_client(kBob, window_b_.span()));
    }
    auto id = store_->open_namespace(test_spec());
    EXPECT_TRUE(id);
    ns_ = id.value_or(0);
    stray_.clear();
    return {};
  }

  HarnessOptions options_;
  std::string path_;
  Area dram_, cxl_, window_a_, window_b_;
  std::shared_ptr<Area> owned_a_, owned_b_;
  cxlpool::testing::FaultyBlockDevice* faulty_ = nullptr;
  std::unique_ptr<KvStore> store_;
  std::uint32_t ns_ = 0;
  std::uint64_t next_id_ = 0;
  std::vector<KvStoreCompletion> stray_;
};

// Tests of a store over an SSD log, run over both block drivers.
class KvStoreOverSsd : public ::testing::TestWithParam<Driver> {
 protected:
  // Every DRAM slot in use holds a DRAM chunk: none is still lent or leaked.
  void expect_no_slot_leaked() {
    const KvStoreCounters& c = h_.store().counters();
    EXPECT_EQ(c.tiers[0].used_bytes, c.tiers[0].chunks * kSlot);
  }

  KvHarness h_;
};

// Opens the harness or skips the test with the host's reason.
#define KV_OPEN_OR_SKIP(harness, options)                      \
  do {                                                         \
    const std::string why_ = (harness).open(options);          \
    if (!why_.empty()) GTEST_SKIP() << why_;                   \
    ASSERT_TRUE((harness).up());                               \
  } while (0)

}  // namespace cxlpool::kvcache::testing
