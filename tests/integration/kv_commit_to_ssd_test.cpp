// SPDX-License-Identifier: Apache-2.0
// put_commit with CXLPOOL_KV_COMMIT_TO_SSD end to end: the real cxlpoold
// with a file-backed SSD log (per-region sync, 1 MiB chunks, at least the
// default ssd_lend_min_bytes, so the log may write them from the put
// window), and the same daemon without one, through the C ABI's
// cxlpool_kv_put_flags and the C++ layer's KvReservation::commit. Also
// commits answered before their copy into DRAM (copy_behind_min_bytes):
// a reader's get right after each put finds the checked bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/kv.h"
#include "cxlpool/kv.hpp"
#include "daemon_process.hpp"
#include "kv_connection.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

constexpr uint64_t kChunk = kMiB;
constexpr uint32_t kChunkTokens = 16;
constexpr uint32_t kChunks = 8;

// 1 MiB slots: 16 in DRAM, none in CXL, a put window of `window_slots`;
// the SSD log (when asked for) in the daemon's state directory, 4 MiB
// regions.
std::string store_config(const std::string& ssd_path, uint64_t window_slots = 16, const std::string& extra = "") {
  std::ostringstream t;
  t << "[kvstore]\n"
    << extra
    << "slot_bytes = " << kChunk << "\n"
    << "dram_bytes = " << 16 * kChunk << "\n"
    << "cxl_bytes = 0\n"
    << "admission_threshold = 1\n"
    << "put_window_bytes = " << window_slots * kChunk << "\n"
    << "client_quota_bytes = 0\n";
  if (!ssd_path.empty()) {
    t << "ssd_path = \"" << ssd_path << "\"\n"
      << "ssd_bytes = " << 64 * kMiB << "\n"
      << "ssd_region_bytes = " << 4 * kMiB << "\n"
      << "ssd_sync = \"per-region\"\n"
      << "ssd_engine = \"auto\"\n";
  }
  return TestConfig{.tables = t.str()}.render();
}

// Chunk i's bytes: a stream seeded by its key, so a chunk read back under
// another key, or a stale one, differs.
std::vector<std::byte> chunk_bytes(const cxlpool_kv_key& key) {
  std::vector<std::byte> out(kChunk);
  uint64_t state = key.lo ^ (key.hi * 31);
  for (uint64_t i = 0; i < kChunk; i += 8) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t word = state ^ (state >> 29);
    std::memcpy(out.data() + i, &word, 8);
  }
  return out;
}

std::vector<uint32_t> tokens(uint32_t first, size_t n) {
  std::vector<uint32_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = first + static_cast<uint32_t>(i * 7 % 1000);
  return out;
}

class KvCommitToSsd : public testing::Test {
 protected:
  void start(bool with_ssd, uint64_t window_slots = 16, const std::string& extra = "") {
    daemon_ = std::make_unique<DaemonProcess>(TestConfig{}.render());
    daemon_->write_config(store_config(with_ssd ? daemon_->dir() + "/kv-ssd.img" : "", window_slots, extra));
    ASSERT_TRUE(daemon_->start());
    conn_ = std::make_unique<KvConnection>(daemon_->socket(), "kv-to-ssd");
    ASSERT_TRUE(conn_->ok()) << conn_->error << " " << cxlpool_last_error();
    const auto spec = kv_namespace_spec("to-ssd-model", "to-ssd-layout", kChunkTokens);
    ASSERT_EQ(cxlpool_kv_namespace_open(conn_->kv, &spec, &ns_), 0) << cxlpool_last_error();
    keys_ = chunk_keys(ns_, tokens(1, kChunks * kChunkTokens));
    ASSERT_EQ(keys_.size(), kChunks);
    for (const auto& k : keys_) data_.push_back(chunk_bytes(k));
    for (const auto& d : data_) pointers_.push_back(d.data());
  }
  void TearDown() override {
    conn_.reset();
    if (daemon_ != nullptr) {
      EXPECT_EQ(daemon_->stop(), 0) << daemon_->log();
    }
  }

  // put of every key with CXLPOOL_KV_COMMIT_TO_SSD: the put's result, and
  // its on-SSD count in *on_ssd.
  int put_to_ssd(uint64_t* on_ssd) {
    return cxlpool_kv_put_flags(conn_->kv, ns_.id, keys_.data(), kChunks, pointers_.data(), kChunk,
                                CXLPOOL_KV_COMMIT_TO_SSD, on_ssd);
  }
  std::vector<cxlpool_kv_location> lookup() {
    std::vector<cxlpool_kv_location> locs(kChunks);
    const int n = cxlpool_kv_lookup(conn_->kv, ns_.id, keys_.data(), kChunks, locs.data());
    EXPECT_GE(n, 0) << cxlpool_last_error();
    locs.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return locs;
  }
  // get of every key: each chunk holds the bytes put.
  void expect_get_returns_what_was_put() {
    std::vector<cxlpool_kv_location> locs(kChunks);
    uint64_t lease = 0;
    ASSERT_EQ(cxlpool_kv_get(conn_->kv, ns_.id, keys_.data(), kChunks, &lease, locs.data()),
              static_cast<int>(kChunks))
        << cxlpool_last_error() << "\n" << daemon_->log();
    for (uint32_t i = 0; i < kChunks; ++i) {
      ASSERT_NE(locs[i].data, nullptr) << i;
      EXPECT_NE(locs[i].tier, CXLPOOL_KV_TIER_SSD) << i << ": a get reads SSD chunks into DRAM";
      ASSERT_EQ(locs[i].length, kChunk) << i;
      EXPECT_EQ(std::memcmp(locs[i].data, data_[i].data(), kChunk), 0) << "chunk " << i << " differs";
    }
    EXPECT_EQ(cxlpool_kv_release(conn_->kv, lease), 0);
  }

  std::unique_ptr<DaemonProcess> daemon_;
  std::unique_ptr<KvConnection> conn_;
  cxlpool_kv_namespace ns_{};
  std::vector<cxlpool_kv_key> keys_;
  std::vector<std::vector<std::byte>> data_;
  std::vector<const void*> pointers_;
};

TEST_F(KvCommitToSsd, ChunksGoToTheSsdLogOnly) {
  start(true);
  uint64_t on_ssd = 99;
  ASSERT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error() << "\n" << daemon_->log();
  EXPECT_EQ(on_ssd, kChunks);
  const auto locs = lookup();
  ASSERT_EQ(locs.size(), kChunks);
  for (uint32_t i = 0; i < kChunks; ++i) {
    EXPECT_EQ(locs[i].tier, CXLPOOL_KV_TIER_SSD) << "chunk " << i;
    EXPECT_EQ(locs[i].length, kChunk) << "chunk " << i;
  }
  expect_get_returns_what_was_put();
  // Stored already: counted, nothing written, none newly on SSD.
  on_ssd = 99;
  EXPECT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error();
  EXPECT_EQ(on_ssd, 0u);
  expect_get_returns_what_was_put();
}

// The C++ layer's two-phase form: write into the reserved slots, commit with
// KvPutFlags::kToSsd.
TEST_F(KvCommitToSsd, ReservationCommitsToTheSsdLog) {
  start(true);
  const std::vector<KvKey> two(keys_.begin(), keys_.begin() + 2);
  uint64_t reservation = 0;
  std::vector<cxlpool_kv_location> slots(2);
  ASSERT_EQ(cxlpool_kv_put_begin(conn_->kv, ns_.id, two.data(), 2, kChunk, &reservation, slots.data()), 0)
      << cxlpool_last_error();
  KvReservation r(conn_->kv, ns_.id, reservation, two, slots);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_FALSE(r.cached(i));
    std::memcpy(r.data(i), data_[i].data(), kChunk);
  }
  EXPECT_EQ(r.commit(KvPutFlags::kToSsd), 2u);
  EXPECT_EQ(r.on_ssd(), 2u);
  const auto locs = lookup();
  ASSERT_GE(locs.size(), 2u);
  EXPECT_EQ(locs[0].tier, CXLPOOL_KV_TIER_SSD);
  EXPECT_EQ(locs[1].tier, CXLPOOL_KV_TIER_SSD);
  // The rest through put: the two stored already are not counted as on SSD.
  uint64_t on_ssd = 99;
  ASSERT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error();
  EXPECT_EQ(on_ssd, kChunks - 2);
  expect_get_returns_what_was_put();
}

// A window of two slots for eight chunks: each round's slots stay with the
// log until their region is written (or it copies them back), and the
// blocking put waits for them instead of failing with EAGAIN.
TEST_F(KvCommitToSsd, APutLargerThanItsWindowWaitsForTheLogsSlots) {
  start(true, 2);
  uint64_t on_ssd = 99;
  ASSERT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error() << "\n" << daemon_->log();
  EXPECT_EQ(on_ssd, kChunks);
  expect_get_returns_what_was_put();
}

// A connection that closes right after its puts: the daemon keeps (or
// copies) what the log still writes from its window, and another
// connection reads every chunk back, before and after a restart.
TEST_F(KvCommitToSsd, ChunksOfAClosedConnectionStayWhole) {
  start(true);
  uint64_t on_ssd = 0;
  ASSERT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error();
  ASSERT_EQ(on_ssd, kChunks);
  conn_ = std::make_unique<KvConnection>(daemon_->socket(), "kv-to-ssd-reader");
  ASSERT_TRUE(conn_->ok()) << conn_->error << " " << cxlpool_last_error();
  const auto spec = kv_namespace_spec("to-ssd-model", "to-ssd-layout", kChunkTokens);
  ASSERT_EQ(cxlpool_kv_namespace_open(conn_->kv, &spec, &ns_), 0) << cxlpool_last_error();
  expect_get_returns_what_was_put();
  conn_.reset();
  // A new daemon, in a directory of its own, on the first one's log.
  const std::string log_path = daemon_->dir() + "/kv-ssd.img";
  ASSERT_EQ(daemon_->stop(), 0) << daemon_->log();
  auto first = std::move(daemon_);
  daemon_ = std::make_unique<DaemonProcess>(TestConfig{}.render());
  daemon_->write_config(store_config(log_path));
  ASSERT_TRUE(daemon_->start());
  conn_ = std::make_unique<KvConnection>(daemon_->socket(), "kv-to-ssd-after");
  ASSERT_TRUE(conn_->ok()) << conn_->error << " " << cxlpool_last_error();
  ASSERT_EQ(cxlpool_kv_namespace_open(conn_->kv, &spec, &ns_), 0) << cxlpool_last_error();
  const auto locs = lookup();
  ASSERT_EQ(locs.size(), kChunks) << "a clean stop writes the log";
  expect_get_returns_what_was_put();
  conn_.reset();
  EXPECT_EQ(daemon_->stop(), 0) << daemon_->log();
  daemon_ = std::move(first);  // stopped already; its directory goes last
}

TEST_F(KvCommitToSsd, WithoutAnSsdLogTheChunksStayInDram) {
  start(false);
  uint64_t on_ssd = 99;
  ASSERT_EQ(put_to_ssd(&on_ssd), static_cast<int>(kChunks)) << cxlpool_last_error() << "\n" << daemon_->log();
  EXPECT_EQ(on_ssd, 0u);
  const auto locs = lookup();
  ASSERT_EQ(locs.size(), kChunks);
  for (uint32_t i = 0; i < kChunks; ++i) EXPECT_EQ(locs[i].tier, CXLPOOL_KV_TIER_DRAM) << "chunk " << i;
  expect_get_returns_what_was_put();
}

TEST_F(KvCommitToSsd, UnknownFlagsAreRefused) {
  start(false);
  uint64_t on_ssd = 99;
  EXPECT_EQ(cxlpool_kv_put_flags(conn_->kv, ns_.id, keys_.data(), kChunks, pointers_.data(), kChunk, 1u << 2,
                                 &on_ssd),
            -EINVAL);
  EXPECT_EQ(on_ssd, 99u);
  EXPECT_TRUE(lookup().empty());
}

// One of the daemon's counters, through the client's connection.
uint64_t daemon_counter(cxlpool_client* client, const char* name) {
  std::vector<cxlpool_stat> stats(1024);
  const int n = cxlpool_stats(client, stats.data(), stats.size());
  EXPECT_GE(n, 0) << cxlpool_last_error();
  for (int i = 0; i < std::min<int>(n, static_cast<int>(stats.size())); ++i) {
    if (std::strcmp(stats[i].name, name) == 0) return stats[i].value;
  }
  ADD_FAILURE() << "the daemon has no counter " << name;
  return 0;
}

class KvCopyBehind : public KvCommitToSsd {
 protected:
  // Puts the chunks one at a time; after each, a second connection gets it
  // at once and checks every byte. The count the daemon copied behind.
  uint64_t put_each_and_read_it_back() {
    KvConnection reader(daemon_->socket(), "kv-copy-behind-reader");
    EXPECT_TRUE(reader.ok()) << reader.error;
    cxlpool_kv_namespace ns{};
    const auto spec = kv_namespace_spec("to-ssd-model", "to-ssd-layout", kChunkTokens);
    EXPECT_EQ(cxlpool_kv_namespace_open(reader.kv, &spec, &ns), 0) << cxlpool_last_error();
    for (uint32_t i = 0; i < kChunks; ++i) {
      EXPECT_EQ(cxlpool_kv_put(conn_->kv, ns_.id, &keys_[i], 1, &pointers_[i], kChunk), 1) << cxlpool_last_error();
      cxlpool_kv_location loc{};
      uint64_t lease = 0;
      EXPECT_EQ(cxlpool_kv_get(reader.kv, ns.id, &keys_[i], 1, &lease, &loc), 1) << i << " " << cxlpool_last_error();
      if (loc.data == nullptr) continue;
      EXPECT_EQ(loc.length, kChunk);
      EXPECT_EQ(std::memcmp(loc.data, data_[i].data(), kChunk), 0) << "chunk " << i << " differs";
      EXPECT_EQ(cxlpool_kv_release(reader.kv, lease), 0);
    }
    EXPECT_EQ(daemon_counter(conn_->client, "kv.put_window_changed"), 0u);
    EXPECT_EQ(daemon_counter(conn_->client, "kv.put_checksum_mismatch"), 0u) << "cxlpool_kv_put declares them";
    return daemon_counter(conn_->client, "kv.puts_copied_behind");
  }

  // Two chunks copied into their slots with cxlpool_kv_copy_chunk and
  // committed declaring their checksums, the second's wrong: the commit's
  // count; then the first is served as put and the second never is.
  int commit_one_wrong_checksum() {
    uint64_t reservation = 0;
    cxlpool_kv_location slots[2]{};
    EXPECT_EQ(cxlpool_kv_put_begin(conn_->kv, ns_.id, keys_.data(), 2, kChunk, &reservation, slots), 0)
        << cxlpool_last_error();
    uint32_t checksums[2];
    for (int i = 0; i < 2; ++i) checksums[i] = cxlpool_kv_copy_chunk(slots[i].data, data_[i].data(), kChunk);
    checksums[1] ^= 0x80000000u;
    EXPECT_EQ(cxlpool_kv_put_commit_checksums(conn_->kv, ns_.id, reservation, keys_.data(), 2, nullptr, 0, nullptr),
              -EINVAL);
    const int committed =
        cxlpool_kv_put_commit_checksums(conn_->kv, ns_.id, reservation, keys_.data(), 2, checksums, 0, nullptr);
    std::vector<cxlpool_kv_location> locs(2);
    uint64_t lease = 0;
    EXPECT_EQ(cxlpool_kv_get(conn_->kv, ns_.id, keys_.data(), 2, &lease, locs.data()), 1) << cxlpool_last_error();
    EXPECT_EQ(std::memcmp(locs[0].data, data_[0].data(), kChunk), 0);
    EXPECT_EQ(cxlpool_kv_release(conn_->kv, lease), 0);
    EXPECT_EQ(daemon_counter(conn_->client, "kv.put_checksum_mismatch"), 1u);
    return committed;
  }
};

TEST(KvCopyChunk, CopiesAndReturnsTheCrc32cOfTheSource) {
  // The standard check value, then a chunk longer than one block with a
  // tail: the CRC matches the one-shot value over the whole source.
  const char digits[] = "123456789";
  char out[9] = {};
  EXPECT_EQ(cxlpool_kv_copy_chunk(out, digits, 9), 0xE3069283u);
  EXPECT_EQ(std::memcmp(out, digits, 9), 0);
  std::vector<std::byte> src(3 * 4096 + 123), dst(src.size());
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::byte>(i * 37 + (i >> 9));
  const uint32_t whole = cxlpool_kv_copy_chunk(dst.data(), src.data(), src.size());
  EXPECT_EQ(dst, src);
  // Against a bitwise CRC-32C of the whole source: the blocks' CRCs chain.
  uint32_t reference = 0xFFFFFFFFu;
  for (const std::byte b : src) {
    reference ^= static_cast<uint8_t>(b);
    for (int k = 0; k < 8; ++k) reference = (reference >> 1) ^ (0x82F63B78u & (0u - (reference & 1u)));
  }
  EXPECT_EQ(whole, ~reference);
  EXPECT_EQ(cxlpool_kv_copy_chunk(nullptr, src.data(), 10), 0u) << "NULL copies nothing";
}

TEST_F(KvCopyBehind, AGetRightAfterEachPutFindsTheCheckedCopy) {
  start(false, 16, "commit_workers = 2\n");
  const uint64_t behind = put_each_and_read_it_back();
  // Each commit finds no other waiting and a window with room: answered
  // before its copy, which the reader's get then waits for.
  EXPECT_EQ(behind, kChunks);
  expect_get_returns_what_was_put();
}

TEST_F(KvCopyBehind, AWrongDeclaredChecksumIsFoundBehindTheAnswer) {
  start(false, 16, "commit_workers = 2\n");
  // Answered before the copies: both count; the copy then drops the second.
  EXPECT_EQ(commit_one_wrong_checksum(), 2);
  EXPECT_EQ(daemon_counter(conn_->client, "kv.puts_copied_behind"), 2u);
}

// Copied before the answer into DRAM slots the SSD log may borrow (the copy
// takes each chunk's CRC): the second chunk is refused then.
TEST_F(KvCopyBehind, AWrongDeclaredChecksumIsRefusedBeforeTheAnswerInAStoreWithAnSsdLog) {
  start(true, 16, "commit_workers = 2\ncopy_behind_min_bytes = 0\n");
  EXPECT_EQ(commit_one_wrong_checksum(), 1);
}

TEST_F(KvCopyBehind, OffTheCommitsCopyBeforeTheirAnswer) {
  start(false, 16, "commit_workers = 2\ncopy_behind_min_bytes = 0\n");
  EXPECT_EQ(put_each_and_read_it_back(), 0u);
  expect_get_returns_what_was_put();
}

}  // namespace
}  // namespace cxlpool::integration
