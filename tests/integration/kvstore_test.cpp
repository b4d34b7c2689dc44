// SPDX-License-Identifier: Apache-2.0
// The KV-cache store end to end: the real cxlpoold with a file-backed SSD
// tier in its temporary state directory, client processes using the C ABI
// (kv.h), and cxlpoolctl kv. Chunk bytes are a function of the chunk's key,
// so every read checks exactly what was stored under that key.
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "cxlpool/proto/kv_ring.hpp"
#include "ctl_runner.hpp"
#include "daemon_process.hpp"
#include "kv_connection.hpp"
#include "log_lines.hpp"
#include "pool_queries.hpp"
#include "support/temp_dir.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr uint64_t kSlot = 64 * 1024;
constexpr uint32_t kChunkTokens = 16;

// [kvstore] keys on top of a small default: 64 KiB slots, no SSD unless a
// path is given.
struct KvConfig {
  uint64_t dram_slots = 16;
  uint64_t cxl_slots = 16;
  uint32_t admission_threshold = 1;
  std::string ssd_path;
  uint64_t ssd_bytes = 32 * kMiB;
  uint64_t ssd_region_bytes = kMiB;  // 15 chunks of 64 KiB
  std::string ssd_sync = "per-region";
  uint64_t quota_bytes = 0;
  std::string daemon;   // extra [daemon] keys
  std::string kvstore;  // extra [kvstore] keys

  std::string render() const {
    std::ostringstream t;
    t << "[kvstore]\n"
      << "slot_bytes = " << kSlot << "\n"
      << "dram_bytes = " << dram_slots * kSlot << "\n"
      << "cxl_bytes = " << cxl_slots * kSlot << "\n"
      << "admission_threshold = " << admission_threshold << "\n"
      << "put_window_bytes = " << 16 * kSlot << "\n"
      << "client_quota_bytes = " << quota_bytes << "\n"
      << kvstore;
    if (!ssd_path.empty()) {
      t << "ssd_path = \"" << ssd_path << "\"\n"
        << "ssd_bytes = " << ssd_bytes << "\n"
        << "ssd_region_bytes = " << ssd_region_bytes << "\n"
        << "ssd_sync = \"" << ssd_sync << "\"\n"
        << "ssd_engine = \"auto\"\n";
    }
    return TestConfig{.daemon = daemon, .tables = t.str()}.render();
  }
};

// ---- chunk contents, tokens, keys ----

uint64_t splitmix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The bytes stored under `key`: a pseudo-random stream seeded by the key.
std::vector<std::byte> chunk_bytes(const cxlpool_kv_key& key, uint64_t length) {
  std::vector<std::byte> out(length);
  uint64_t state = key.lo ^ (key.hi * 31) ^ length;
  for (uint64_t i = 0; i < length; i += 8) {
    const uint64_t word = splitmix(state);
    std::memcpy(out.data() + i, &word, std::min<uint64_t>(8, length - i));
  }
  return out;
}

// "" when `data` holds exactly chunk_bytes(key, length), else what differs.
std::string chunk_mismatch(const void* data, const cxlpool_kv_key& key, uint64_t length) {
  if (data == nullptr) return "no data pointer";
  const auto expected = chunk_bytes(key, length);
  const auto* got = static_cast<const std::byte*>(data);
  for (uint64_t i = 0; i < length; ++i) {
    if (got[i] != expected[i]) return "first differing byte at offset " + std::to_string(i);
  }
  return "";
}

std::vector<uint32_t> tokens(uint64_t seed, size_t n) {
  std::vector<uint32_t> out(n);
  uint64_t state = seed;
  for (auto& t : out) t = static_cast<uint32_t>(splitmix(state) % 128000);
  return out;
}

std::string key_text(const cxlpool_kv_key& k) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(k.hi),
                static_cast<unsigned long long>(k.lo));
  return buf;
}

// ---- one client connection with its KV data path ----

struct KvSession : KvConnection {
  using KvConnection::KvConnection;

  // The test namespace (same spec: same id and fingerprint); id 0 on error.
  cxlpool_kv_namespace open_namespace(const char* model = "itest-model", int* err = nullptr, uint32_t mode = 0) {
    const auto spec = kv_namespace_spec(model, "itest-layout", kChunkTokens, mode);
    cxlpool_kv_namespace ns{};
    const int rc = cxlpool_kv_namespace_open(kv, &spec, &ns);
    if (err != nullptr) *err = rc;
    if (rc != 0) ns.id = 0;
    return ns;
  }

  std::vector<cxlpool_kv_key> keys(const cxlpool_kv_namespace& ns, const std::vector<uint32_t>& toks,
                                   const cxlpool_kv_key* parent = nullptr) const {
    return chunk_keys(ns, toks, parent);
  }

  // Stores keys[i] with chunk_bytes(keys[i], length); the put's result.
  int put(uint64_t ns_id, const std::vector<cxlpool_kv_key>& keys, uint64_t length) {
    std::vector<std::vector<std::byte>> bytes;
    std::vector<const void*> data;
    for (const auto& k : keys) bytes.push_back(chunk_bytes(k, length));
    for (const auto& b : bytes) data.push_back(b.data());
    return cxlpool_kv_put(kv, ns_id, keys.data(), static_cast<uint32_t>(keys.size()), data.data(), length);
  }

  // Stores the keys with one put each, in order, so that every put may evict
  // the chunks before it; how many were stored before a put failed.
  size_t put_each(uint64_t ns_id, const std::vector<cxlpool_kv_key>& keys, uint64_t length) {
    size_t stored = 0;
    while (stored < keys.size() && put(ns_id, {keys[stored]}, length) == 1) ++stored;
    return stored;
  }

  int lookup(uint64_t ns_id, const std::vector<cxlpool_kv_key>& keys, std::vector<cxlpool_kv_location>* locs = nullptr) {
    std::vector<cxlpool_kv_location> l(keys.size());
    const int rc = cxlpool_kv_lookup(kv, ns_id, keys.data(), static_cast<uint32_t>(keys.size()), l.data());
    if (locs != nullptr) *locs = l;
    return rc;
  }

  int lookup_one(uint64_t ns_id, const cxlpool_kv_key& key, cxlpool_kv_location* loc = nullptr) {
    cxlpool_kv_location l{};
    const int rc = cxlpool_kv_lookup(kv, ns_id, &key, 1, &l);
    if (loc != nullptr) *loc = l;
    return rc;
  }
};

// A lease taken with get, released on destruction.
struct Lease {
  cxlpool_kv* kv = nullptr;
  uint64_t id = 0;
  int result = 0;  // get's return: prefix length or -errno
  std::vector<cxlpool_kv_location> locs;

  Lease(KvSession& s, uint64_t ns_id, const std::vector<cxlpool_kv_key>& keys) : kv(s.kv), locs(keys.size()) {
    result = cxlpool_kv_get(kv, ns_id, keys.data(), static_cast<uint32_t>(keys.size()), &id, locs.data());
  }
  ~Lease() { release(); }
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  int release() {
    if (id == 0) return 0;
    const int rc = cxlpool_kv_release(kv, std::exchange(id, 0));
    return rc;
  }
};

// "" when the get leased every key and every location holds its bytes.
std::string check_lease(const Lease& lease, const std::vector<cxlpool_kv_key>& keys, uint64_t length) {
  if (lease.result != static_cast<int>(keys.size())) {
    return "get returned " + std::to_string(lease.result) + ", expected " + std::to_string(keys.size());
  }
  if (lease.id == 0) return "no lease id";
  for (size_t i = 0; i < keys.size(); ++i) {
    const auto& l = lease.locs[i];
    if (l.tier != CXLPOOL_KV_TIER_DRAM && l.tier != CXLPOOL_KV_TIER_CXL) {
      return "chunk " + std::to_string(i) + " leased on tier " + std::to_string(l.tier);
    }
    if (l.length != length) return "chunk " + std::to_string(i) + " length " + std::to_string(l.length);
    const std::string bad = chunk_mismatch(l.data, keys[i], length);
    if (!bad.empty()) return "chunk " + std::to_string(i) + " (" + key_text(keys[i]) + "): " + bad;
  }
  return "";
}

// The permissions ("r--s", ...) of the mapping of this process holding addr.
std::string mapping_perms(const void* addr) {
  std::ifstream maps("/proc/self/maps");
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (a >= lo && a < hi) return perms;
  }
  return "unmapped";
}

proto::KvStatusReply kv_status(Connection& conn) {
  return call_or_fail<proto::KvStatusReply>(conn, proto::KvStatusRequest{}, "KvStatus");
}

class KvStore : public testing::Test {
 protected:
  // Starts a daemon whose SSD file (if any) lives in its state directory.
  void start(KvConfig config, bool with_ssd = true) { ASSERT_TRUE(try_start(config, with_ssd)); }
  testing::AssertionResult try_start(KvConfig config, bool with_ssd, const DaemonStartOptions& options = {}) {
    config_ = config;
    daemon_ = std::make_unique<DaemonProcess>(TestConfig{}.render());
    if (with_ssd) config_.ssd_path = daemon_->dir() + "/kv-ssd.img";
    daemon_->write_config(config_.render());
    return daemon_->start(options);
  }
  std::string socket() const { return daemon_->socket(); }
  // The store's status, asked on an admin connection of its own.
  proto::KvStatusReply store_status() {
    auto admin = connect_admin(socket());
    return admin ? kv_status(*admin) : proto::KvStatusReply{};
  }

  ProgramResult ctl(std::vector<std::string> args, ProgramOptions options = {}) {
    return run_ctl(socket(), std::move(args), options);
  }
  json ctl_json(std::vector<std::string> args) { return run_ctl_json(socket(), std::move(args)); }

  // A restarted daemon runs in a new directory; the ones before it (the
  // first holds the SSD file) are kept until the end.
  void restart() {
    ASSERT_EQ(daemon_->stop(), 0) << daemon_->log();
    retired_.push_back(std::move(daemon_));
    daemon_ = std::make_unique<DaemonProcess>(TestConfig{}.render());
    daemon_->write_config(config_.render());
    ASSERT_TRUE(daemon_->start());
  }

  KvConfig config_;
  std::vector<std::unique_ptr<DaemonProcess>> retired_;
  std::unique_ptr<DaemonProcess> daemon_;
};

// ---- two processes share a prefix, zero copy ----

TEST_F(KvStore, TwoProcessesShareAPrefixZeroCopy) {
  start(KvConfig{});
  // Prompt A: 6 full chunks and a partial one. Prompt B: A's first 4 chunks,
  // then its own continuation.
  const auto prompt_a = tokens(1, 6 * kChunkTokens + 5);
  auto prompt_b = std::vector<uint32_t>(prompt_a.begin(), prompt_a.begin() + 4 * kChunkTokens);
  const auto tail_b = tokens(2, 3 * kChunkTokens);
  prompt_b.insert(prompt_b.end(), tail_b.begin(), tail_b.end());
  const std::string sock = socket();

  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);
  // Process A: puts its prompt, leases it, reports the slots, and holds the
  // lease until told to go.
  ForkedChild writer([&](int fd) {
    ChildChecks c(fd);
    ::close(go[1]);
    KvSession s(sock, "kv-writer");
    CHILD_EXPECT_EQ(c, s.error, 0);
    if (!s.ok()) return 1;
    const auto ns = s.open_namespace();
    CHILD_EXPECT(c, ns.id != 0);
    const auto keys = s.keys(ns, prompt_a);
    CHILD_EXPECT_EQ(c, keys.size(), 6u);  // the partial chunk has no key
    CHILD_EXPECT_EQ(c, s.lookup(ns.id, keys), 0);
    CHILD_EXPECT_EQ(c, s.put(ns.id, keys, kSlot), 6);
    Lease lease(s, ns.id, keys);
    const std::string bad = check_lease(lease, keys, kSlot);
    CHILD_EXPECT_EQ(c, bad, std::string());
    std::string line = "slots";
    for (const auto& l : lease.locs) line += " " + std::to_string(l.tier) + ":" + std::to_string(l.offset);
    line += "\n";
    (void)!::write(fd, line.data(), line.size());
    char b;
    (void)!::read(go[0], &b, 1);
    CHILD_EXPECT_EQ(c, lease.release(), 0);
    return c.ok() ? 0 : 1;
  });
  ::close(go[0]);
  auto slots_line = writer.read_line(20s);
  ASSERT_TRUE(slots_line.has_value()) << "writer: " << writer.read_all(1s);
  ASSERT_EQ(slots_line->rfind("slots", 0), 0u) << *slots_line << writer.read_all(1s);
  std::vector<std::string> writer_slots;
  {
    std::istringstream in(slots_line->substr(5));
    std::string s;
    while (in >> s) writer_slots.push_back(s);
  }
  ASSERT_EQ(writer_slots.size(), 6u);

  // Process B, while A holds its lease: computes its own keys, finds A's 4
  // chunks as its cached prefix, leases and reads them in place (the same
  // arena slots as A's, mapped read-only), then stores its own continuation.
  const std::string failures = run_checks_in_child([&](ChildChecks& c) {
    KvSession s(sock, "kv-reader");
    CHILD_EXPECT_EQ(c, s.error, 0);
    if (!s.ok()) return;
    const auto ns = s.open_namespace();
    const auto keys = s.keys(ns, prompt_b);
    CHILD_EXPECT_EQ(c, keys.size(), 7u);
    std::vector<cxlpool_kv_location> locs;
    CHILD_EXPECT_EQ(c, s.lookup(ns.id, keys, &locs), 4);
    const std::vector<cxlpool_kv_key> prefix(keys.begin(), keys.begin() + 4);
    {
      Lease lease(s, ns.id, keys);
      CHILD_EXPECT_EQ(c, lease.result, 4);
      CHILD_EXPECT(c, lease.id != 0);
      std::vector<cxlpool_kv_location> got(lease.locs.begin(), lease.locs.begin() + 4);
      Lease exact(s, ns.id, prefix);  // a second lease of the same chunks
      CHILD_EXPECT_EQ(c, check_lease(exact, prefix, kSlot), std::string());
      for (size_t i = 0; i < 4 && lease.result == 4; ++i) {
        const auto& l = lease.locs[i];
        CHILD_EXPECT_EQ(c, std::to_string(l.tier) + ":" + std::to_string(l.offset), writer_slots[i]);
        CHILD_EXPECT_EQ(c, chunk_mismatch(l.data, keys[i], kSlot), std::string());
        const std::string perms = mapping_perms(l.data);
        CHILD_EXPECT(c, perms.size() == 4 && perms[0] == 'r' && perms[1] == '-');
      }
      CHILD_EXPECT_EQ(c, exact.release(), 0);
      CHILD_EXPECT_EQ(c, lease.release(), 0);
    }
    // B's own continuation: chunks 0..3 are already stored (nothing to
    // write), 4..6 are new.
    uint64_t reservation = 0;
    std::vector<cxlpool_kv_location> slots(keys.size());
    CHILD_EXPECT_EQ(c, cxlpool_kv_put_begin(s.kv, ns.id, keys.data(), 7, kSlot, &reservation, slots.data()), 0);
    std::vector<cxlpool_kv_key> to_commit;
    for (size_t i = 0; i < keys.size(); ++i) {
      const bool cached = (slots[i].flags & CXLPOOL_KV_LOC_CACHED) != 0;
      CHILD_EXPECT_EQ(c, cached, i < 4);
      if (cached) continue;
      CHILD_EXPECT_EQ(c, slots[i].tier, CXLPOOL_KV_TIER_PUT_WINDOW);
      CHILD_EXPECT(c, slots[i].data != nullptr && slots[i].length >= kSlot);
      if (slots[i].data == nullptr) continue;
      const auto bytes = chunk_bytes(keys[i], kSlot);
      std::memcpy(slots[i].data, bytes.data(), kSlot);
      to_commit.push_back(keys[i]);
    }
    CHILD_EXPECT_EQ(c, cxlpool_kv_put_commit(s.kv, ns.id, reservation, to_commit.data(),
                                             static_cast<uint32_t>(to_commit.size())),
                    3);
    CHILD_EXPECT_EQ(c, s.lookup(ns.id, keys), 7);
  });
  EXPECT_EQ(failures, "");
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  EXPECT_EQ(writer.wait(20s), 0) << writer.read_all(1s);

  // A third process sees both prompts whole; nothing stays leased.
  KvSession s(socket(), "kv-checker");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  EXPECT_EQ(s.lookup(ns.id, s.keys(ns, prompt_a)), 6);
  const auto keys_b = s.keys(ns, prompt_b);
  EXPECT_EQ(s.lookup(ns.id, keys_b), 7);
  Lease all_b(s, ns.id, keys_b);
  EXPECT_EQ(check_lease(all_b, keys_b, kSlot), "");
  all_b.release();
  const auto st = store_status();
  EXPECT_EQ(st.enabled, 1);
  EXPECT_EQ(st.leases, 0u);
  EXPECT_EQ(st.reservations, 0u);
  EXPECT_EQ(st.puts, 9u);
}

// ---- lookup prefix semantics ----

TEST_F(KvStore, LookupAnswersTheLongestCachedPrefix) {
  start(KvConfig{}, false);
  KvSession s(socket(), "kv-prefix");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  ASSERT_NE(ns.id, 0u);
  EXPECT_EQ(ns.chunk_tokens, kChunkTokens);
  const auto toks = tokens(10, 8 * kChunkTokens);
  const auto keys = s.keys(ns, toks);
  ASSERT_EQ(keys.size(), 8u);

  // A partial chunk has no key; keys chain: the same chunk tokens after a
  // different prefix get a different key.
  EXPECT_EQ(s.keys(ns, std::vector<uint32_t>(toks.begin(), toks.begin() + kChunkTokens - 1)).size(), 0u);
  auto other = toks;
  other[0] ^= 1;
  const auto other_keys = s.keys(ns, other);
  for (size_t i = 0; i < 8; ++i) EXPECT_FALSE(other_keys[i].lo == keys[i].lo && other_keys[i].hi == keys[i].hi) << i;
  // Keys of a continuation chained from a parent equal the whole sequence's.
  const std::vector<uint32_t> tail(toks.begin() + 3 * kChunkTokens, toks.end());
  const auto chained = s.keys(ns, tail, &keys[2]);
  ASSERT_EQ(chained.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(chained[i].lo == keys[3 + i].lo && chained[i].hi == keys[3 + i].hi);
  // Another namespace gives other keys for the same tokens.
  const auto ns2 = s.open_namespace("itest-model-2");
  ASSERT_NE(ns2.id, 0u);
  EXPECT_NE(ns2.id, ns.id);
  const auto keys2 = s.keys(ns2, toks);
  EXPECT_FALSE(keys2[0].lo == keys[0].lo && keys2[0].hi == keys[0].hi);

  // Store chunks 0..4 of 8.
  const std::vector<cxlpool_kv_key> first5(keys.begin(), keys.begin() + 5);
  ASSERT_EQ(s.put(ns.id, first5, kSlot), 5);
  std::vector<cxlpool_kv_location> locs;
  EXPECT_EQ(s.lookup(ns.id, keys, &locs), 5);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(locs[i].tier, CXLPOOL_KV_TIER_DRAM) << i;
    EXPECT_EQ(locs[i].length, kSlot) << i;
  }
  EXPECT_EQ(s.lookup(ns.id, other_keys), 0);
  EXPECT_EQ(s.lookup(ns2.id, keys2), 0);
  // The prefix stops at the first missing key even when later ones exist.
  std::vector<cxlpool_kv_key> gap{keys[0], keys[1], keys[6], keys[3]};
  EXPECT_EQ(s.lookup(ns.id, gap), 2);
  // A deleted chunk cuts the prefix there.
  EXPECT_EQ(cxlpool_kv_delete(s.kv, ns.id, &keys[2], 1), 1);
  EXPECT_EQ(s.lookup(ns.id, keys), 2);
  {
    Lease lease(s, ns.id, keys);
    EXPECT_EQ(lease.result, 2);
    EXPECT_EQ(check_lease(lease, std::vector<cxlpool_kv_key>(keys.begin(), keys.begin() + 2), kSlot), "");
  }
  // A get of nothing cached leases nothing.
  {
    Lease none(s, ns.id, other_keys);
    EXPECT_EQ(none.result, 0);
    EXPECT_EQ(none.id, 0u);
  }
  // Errors: a namespace this connection did not open (unknown ones alike), a
  // lease that is not ours, a chunk bigger than a slot.
  EXPECT_EQ(s.lookup(999999, keys), -EACCES);
  EXPECT_EQ(cxlpool_kv_release(s.kv, 123456789), -ENOENT);
  // A release that is not waited for: the daemon takes it before anything
  // the handle sends later, and an unknown lease is not reported.
  {
    std::vector<cxlpool_kv_location> locs(2);
    uint64_t id = 0;
    ASSERT_EQ(cxlpool_kv_get(s.kv, ns.id, keys.data(), 2, &id, locs.data()), 2) << cxlpool_last_error();
    EXPECT_EQ(store_status().leases, 1u);
    EXPECT_EQ(cxlpool_kv_release_nowait(s.kv, id), 0) << cxlpool_last_error();
    EXPECT_EQ(cxlpool_kv_release(s.kv, id), -ENOENT);
    EXPECT_EQ(store_status().leases, 0u);
    EXPECT_EQ(cxlpool_kv_release_nowait(s.kv, 123456789), 0);
    EXPECT_EQ(s.lookup(ns.id, keys), 2);
  }
  EXPECT_EQ(s.put(ns.id, {keys[7]}, kSlot + 1), -EMSGSIZE);
  // Chunks shorter than a slot keep their length.
  ASSERT_EQ(s.put(ns.id, {keys[2]}, 10000), 1);
  Lease short_one(s, ns.id, {keys[2]});
  EXPECT_EQ(check_lease(short_one, {keys[2]}, 10000), "");
}

// ---- tiers: DRAM -> CXL -> SSD and back ----

TEST_F(KvStore, ChunksDemoteToCxlThenSsdAndComeBackOnGet) {
  // Regions of 3 chunks: most SSD chunks are in sealed regions, read from the
  // device rather than from the open region's buffer.
  start(KvConfig{.dram_slots = 4, .cxl_slots = 4, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024});
  KvSession s(socket(), "kv-tiers");
  ASSERT_TRUE(s.ok()) << s.error;
  cxlpool_kv_info info{};
  ASSERT_EQ(cxlpool_kv_get_info(s.kv, &info), 0);
  EXPECT_EQ(info.slot_bytes, kSlot);
  EXPECT_EQ(info.arena_bytes[0], 4 * kSlot);
  EXPECT_EQ(info.arena_bytes[1], 4 * kSlot);
  EXPECT_GT(info.tier_bandwidth_bps[2], 0u) << "the SSD tier is configured";

  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(20, 16 * kChunkTokens));
  ASSERT_EQ(keys.size(), 16u);
  // Lengths that are not block multiples go through the SSD log too.
  auto length_of = [](size_t i) { return i % 3 == 0 ? kSlot - 1000 * (i + 1) : kSlot; };
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(s.put(ns.id, {keys[i]}, length_of(i)), 1) << i;

  // Nothing was lost: 4 chunks fit in DRAM, 4 in CXL, the rest went to SSD.
  std::vector<cxlpool_kv_location> locs;
  ASSERT_EQ(s.lookup(ns.id, keys, &locs), 16);
  size_t per_tier[3] = {0, 0, 0};
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_LE(locs[i].tier, 2u) << i;
    ++per_tier[locs[i].tier];
    EXPECT_EQ(locs[i].length, length_of(i)) << i;
    if (locs[i].tier == CXLPOOL_KV_TIER_SSD) {
      EXPECT_EQ(locs[i].data, nullptr) << i;
    }
  }
  EXPECT_EQ(per_tier[0], 4u);
  EXPECT_EQ(per_tier[1], 4u);
  EXPECT_EQ(per_tier[2], 8u);
  // The newest are in DRAM, the oldest on SSD.
  EXPECT_EQ(locs[15].tier, CXLPOOL_KV_TIER_DRAM);
  EXPECT_EQ(locs[0].tier, CXLPOOL_KV_TIER_SSD);

  const auto before = store_status();
  ASSERT_EQ(before.tiers.size(), 3u);
  EXPECT_EQ(before.chunks, 16u);
  EXPECT_GE(before.tiers[1].demotions, 4u);
  EXPECT_GE(before.tiers[2].demotions, 8u);
  EXPECT_GT(before.tiers[2].bytes_written, 0u);

  // Every chunk comes back with its bytes, SSD ones read into an arena slot.
  for (size_t i = 0; i < keys.size(); ++i) {
    Lease lease(s, ns.id, {keys[i]});
    EXPECT_EQ(check_lease(lease, {keys[i]}, length_of(i)), "") << "chunk " << i << " was on tier " << locs[i].tier;
    if (locs[i].tier == CXLPOOL_KV_TIER_SSD && lease.result == 1) {
      EXPECT_EQ(lease.locs[0].tier, CXLPOOL_KV_TIER_DRAM) << i;
      EXPECT_NE(lease.locs[0].flags & CXLPOOL_KV_LOC_SSD_COPY, 0) << i;
    }
  }
  // The SSD chunks just read are promoted: the last ones read are in DRAM now.
  cxlpool_kv_location loc{};
  EXPECT_EQ(s.lookup_one(ns.id, keys[15], &loc), 1);
  EXPECT_EQ(loc.tier, CXLPOOL_KV_TIER_DRAM);
  const auto after = store_status();
  // Chunks read back from SSD keep their SSD copy; the index still holds 16.
  EXPECT_EQ(after.chunks, 16u) << "chunks indexed (all tiers) counts a chunk with an SSD copy twice";
  EXPECT_GT(after.tiers[2].bytes_read, before.tiers[2].bytes_read);
  EXPECT_GT(after.tiers[0].promotions, before.tiers[0].promotions);
  EXPECT_EQ(after.tiers[2].errors, 0u);
  EXPECT_EQ(after.leases, 0u);

  // Prefetch brings SSD chunks to DRAM without a lease.
  ASSERT_EQ(s.lookup(ns.id, keys, &locs), 16);
  std::vector<cxlpool_kv_key> on_ssd;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (locs[i].tier == CXLPOOL_KV_TIER_SSD) on_ssd.push_back(keys[i]);
  }
  ASSERT_FALSE(on_ssd.empty());
  const cxlpool_kv_key target = on_ssd.back();
  EXPECT_EQ(cxlpool_kv_prefetch(s.kv, ns.id, &target, 1), 1);
  EXPECT_TRUE(wait_until(
      [&] {
        cxlpool_kv_location l{};
        return s.lookup_one(ns.id, target, &l) == 1 && l.tier == CXLPOOL_KV_TIER_DRAM;
      },
      10s, 10ms));
}

// A counter of `cxlpoolctl --json stats` (flat: "kv.puts"); -1 when absent.
int64_t stat_value(const json& stats, const std::string& name) {
  return stats.contains(name) ? stats.at(name).get<int64_t>() : -1;
}

// Through the real daemon's views (memfds, hole punches) on its SSD
// engine (io_uring where the kernel has it): each DRAM slot is a
// registered buffer in the view of the namespace that holds it, re-pointed
// as slots pass between two namespaces, and every chunk either namespace
// reads back from the SSD log lands whole in its own view.
TEST_F(KvStore, SsdIoUsesSlotsRegisteredInTheirNamespacesView) {
  start(KvConfig{.dram_slots = 4, .cxl_slots = 0, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024});
  KvSession s(socket(), "kv-registered");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto a = s.open_namespace("itest-model-a");
  const auto b = s.open_namespace("itest-model-b");
  const auto a_keys = s.keys(a, tokens(40, 8 * kChunkTokens));
  const auto b_keys = s.keys(b, tokens(41, 8 * kChunkTokens));
  for (size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(s.put(a.id, {a_keys[i]}, kSlot), 1) << i;
    ASSERT_EQ(s.put(b.id, {b_keys[i]}, kSlot), 1) << i;
  }
  const json before = ctl_json({"stats"});
  const int64_t registered = stat_value(before, "kv.ssd_registrations");
  EXPECT_GE(registered, 4) << "every DRAM slot registered for a namespace: " << before.dump();
  for (const auto& [ns, keys] : {std::pair{a, a_keys}, std::pair{b, b_keys}}) {
    for (size_t i = 0; i < keys.size(); ++i) {
      Lease lease(s, ns.id, {keys[i]});
      EXPECT_EQ(check_lease(lease, {keys[i]}, kSlot), "") << "namespace " << ns.id << " chunk " << i;
    }
  }
  const json after = ctl_json({"stats"});
  EXPECT_GT(stat_value(after, "kv.ssd_registrations"), registered) << "slots passed between the namespaces";
  EXPECT_EQ(stat_value(after, "kv.ssd_registration_errors"), 0) << after.dump();
  EXPECT_EQ(stat_value(after, "kv.ssd_staged_reads"), 0) << "reads land in their registered slots";
  EXPECT_EQ(store_status().tiers.at(2).errors, 0u);
}

// Whether the process's pinning is exempt from RLIMIT_MEMLOCK: CAP_IPC_LOCK
// in its effective set, in the initial user namespace.
bool memlock_exempt(pid_t pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream uid_map(proc + "/uid_map");
  std::string identity;
  std::getline(uid_map, identity);
  std::istringstream fields(identity);
  unsigned long long inside = 1, outside = 1, count = 0;
  if ((fields >> inside >> outside >> count) && !(inside == 0 && outside == 0 && count == 4294967295ull)) return false;
  std::ifstream status(proc + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("CapEff:", 0) != 0) continue;
    return (std::stoull(line.substr(7), nullptr, 16) >> CAP_IPC_LOCK) & 1;
  }
  return true;
}

// A daemon without CAP_IPC_LOCK under a memlock limit that holds its rings
// but not its buffers, as a service manager's LimitMEMLOCK= may leave it:
// the kernel refuses the registrations, the SSD tier goes on with plain
// I/O and loses nothing, and the log says why, with the limit.
TEST_F(KvStore, SsdIoGoesOnUnregisteredWhenTheMemlockLimitRefusesPinning) {
  // The kernel sums the pinned memory of all of a user's processes that
  // lack the capability: with it, the other daemons of the suite running
  // beside this one are left out of that sum.
  if (!memlock_exempt(::getpid())) GTEST_SKIP() << "needs CAP_IPC_LOCK, so that only this daemon counts against the limit";
  constexpr uint64_t kLimit = 128 * 1024;  // below one 256 KiB region buffer
  const auto started =
      try_start(KvConfig{.dram_slots = 4, .cxl_slots = 0, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024},
                true, DaemonStartOptions{.memlock_limit_bytes = kLimit});
  if (!started && daemon_->log().find("io_uring_setup: Cannot allocate memory") != std::string::npos) {
    GTEST_SKIP() << "128 KiB does not hold this kernel's io_uring rings";
  }
  ASSERT_TRUE(started);
  if (memlock_exempt(daemon_->pid())) GTEST_SKIP() << "CAP_IPC_LOCK could not be dropped (no CAP_SETPCAP here)";
  KvSession s(socket(), "kv-memlock");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace("itest-memlock");
  const auto keys = s.keys(ns, tokens(42, 12 * kChunkTokens));
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_EQ(s.put(ns.id, {keys[i]}, kSlot), 1) << i;
  std::vector<cxlpool_kv_location> locs;
  ASSERT_EQ(s.lookup(ns.id, keys, &locs), static_cast<int>(keys.size()));
  size_t on_ssd = 0;
  for (const auto& l : locs) on_ssd += l.tier == CXLPOOL_KV_TIER_SSD ? 1 : 0;
  EXPECT_GE(on_ssd, 8u) << "4 DRAM slots for 12 chunks";
  for (size_t i = 0; i < keys.size(); ++i) {
    Lease lease(s, ns.id, {keys[i]});
    EXPECT_EQ(check_lease(lease, {keys[i]}, kSlot), "") << "chunk " << i;
  }
  const json stats = ctl_json({"stats"});
  EXPECT_EQ(stat_value(stats, "kv.ssd_registration_errors"), 1) << "the table at start, counted once";
  EXPECT_EQ(stat_value(stats, "kv.ssd_registrations"), 0) << "no slot can be registered under this limit";
  EXPECT_EQ(store_status().tiers.at(2).errors, 0u);
  EXPECT_TRUE(wait_until([&] { return daemon_->log().find("RLIMIT_MEMLOCK is 128.0 KiB") != std::string::npos; }, 10s))
      << "the refusal is logged with the limit and the way out:\n" << daemon_->log();
  EXPECT_TRUE(daemon_->running());
}

// Under a limit of 0 even the SSD tier's rings are refused (kernels from
// 6.13 count ring memory too): the daemon does not start, and says why.
TEST_F(KvStore, AMemlockLimitTooSmallForTheRingsIsNamedWhenTheDaemonCannotStart) {
  DaemonProcess daemon(TestConfig{}.render());
  KvConfig config{.dram_slots = 4, .cxl_slots = 0};
  config.ssd_path = daemon.dir() + "/kv-ssd.img";
  daemon.write_config(config.render());
  if (daemon.start(DaemonStartOptions{.memlock_limit_bytes = 0})) {
    const bool exempt = memlock_exempt(daemon.pid());
    EXPECT_EQ(daemon.stop(), 0);
    if (exempt) GTEST_SKIP() << "CAP_IPC_LOCK could not be dropped (no CAP_SETPCAP here)";
    GTEST_SKIP() << "this kernel does not count io_uring rings against RLIMIT_MEMLOCK";
  }
  const std::string log = daemon.log();
  EXPECT_NE(log.find("io_uring_setup: Cannot allocate memory (RLIMIT_MEMLOCK is 0 B and the process lacks CAP_IPC_LOCK"),
            std::string::npos) << log;
}

// A tmpfs without a size limit (as kvstore.view_dir requires) that this test
// mounts, with huge=always where the kernel has THP, and unmounts: the mount
// point is the test's own temporary directory.
class TestTmpfs {
 public:
  TestTmpfs() : dir_("kv-views", "/var/tmp") {
    if (::mount("cxlpool-itest", dir_.path().c_str(), "tmpfs", 0, "huge=always,mode=0700,size=0") == 0) {
      mounted_ = true;
      huge_ = true;
    } else if (errno == EINVAL && ::mount("cxlpool-itest", dir_.path().c_str(), "tmpfs", 0, "mode=0700,size=0") == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~TestTmpfs() {
    if (mounted_) ::umount2(dir_.path().c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  bool huge() const { return huge_; }
  const std::string& error() const { return error_; }
  std::string path() const { return dir_.path().string(); }

 private:
  test::TempDir dir_;
  bool mounted_ = false;
  bool huge_ = false;
  std::string error_;
};

// The files process pid holds open under dir (unnamed ones too: their link
// reads "DIR/#INODE (deleted)"): how many, and the bytes allocated to them.
std::pair<size_t, uint64_t> files_held_under(pid_t pid, const std::string& dir) {
  size_t files = 0;
  uint64_t bytes = 0;
  const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
  for (const auto& entry : std::filesystem::directory_iterator(fds)) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || target.rfind(dir + "/", 0) != 0) continue;
    struct stat st {};
    if (::stat(entry.path().c_str(), &st) != 0) continue;
    ++files;
    bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return {files, bytes};
}

// A value of /proc/PID/smaps_rollup, in kB (-1: no such line).
int64_t smaps_rollup_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps_rollup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1));
  }
  return -1;
}

// kvstore.view_dir: the namespace views are files of a tmpfs the operator
// mounted with huge pages, not memfds. Chunks of two namespaces that take
// each other's slots read back intact, the views' pages are on that tmpfs,
// and the daemon maps them with 2 MiB pages.
TEST_F(KvStore, ViewsLiveOnTheConfiguredTmpfsWithHugePages) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
  TestTmpfs tmpfs;
  if (!tmpfs.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << tmpfs.error();
  KvConfig config{.dram_slots = 64, .cxl_slots = 0};
  config.kvstore = "view_dir = \"" + tmpfs.path() + "\"\n";
  start(config, false);
  KvSession s(socket(), "kv-view-dir");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto a = s.open_namespace("itest-view-dir-a");
  const auto b = s.open_namespace("itest-view-dir-b");
  const auto a_keys = s.keys(a, tokens(50, 64 * kChunkTokens));
  const auto b_keys = s.keys(b, tokens(51, 64 * kChunkTokens));
  ASSERT_EQ(s.put_each(a.id, a_keys, kSlot), a_keys.size()) << cxlpool_last_error();
  const auto [files, a_bytes] = files_held_under(daemon_->pid(), tmpfs.path());
  EXPECT_EQ(files, 2u) << "one view per namespace, unnamed files on the tmpfs";
  EXPECT_GE(a_bytes, 64 * kSlot) << "a's chunks are in its view on the tmpfs";
  // b's chunks take a's slots: a's view is punched there, b's filled.
  ASSERT_EQ(s.put_each(b.id, b_keys, kSlot), b_keys.size()) << cxlpool_last_error();
  for (size_t i = 0; i < b_keys.size(); i += 7) {
    Lease lease(s, b.id, {b_keys[i]});
    EXPECT_EQ(check_lease(lease, {b_keys[i]}, kSlot), "") << "chunk " << i;
  }
  const json stats = ctl_json({"stats"});
  EXPECT_GE(stat_value(stats, "kv.view_punches"), 32) << stats.dump();
  // 64 KiB slots share 2 MiB pages (the daemon warns): at most a page per
  // view beyond the arena's 4 MiB.
  EXPECT_LE(files_held_under(daemon_->pid(), tmpfs.path()).second, 64 * kSlot + 2 * 2 * kMiB)
      << "a slot's pages are in one view only";
  if (!tmpfs.huge()) GTEST_SKIP() << "this kernel's tmpfs has no huge= option (no THP)";
  std::ifstream shmem("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string setting;
  std::getline(shmem, setting);
  if (setting.find("[deny]") != std::string::npos) GTEST_SKIP() << "shmem_enabled is deny: no huge pages on any tmpfs";
  EXPECT_NE(daemon_->log().find("huge=always: 2 MiB pages"), std::string::npos) << daemon_->log();
  EXPECT_NE(daemon_->log().find("share 2 MiB pages"), std::string::npos) << "64 KiB slots: " << daemon_->log();
  EXPECT_GT(smaps_rollup_kb(daemon_->pid(), "ShmemPmdMapped"), 0) << "the daemon maps the views with 2 MiB pages";
}

TEST_F(KvStore, SsdAdmitsOnlyChunksSeenTwice) {
  start(KvConfig{.dram_slots = 4, .cxl_slots = 0, .admission_threshold = 2});
  KvSession s(socket(), "kv-admission");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(30, 8 * kChunkTokens));
  ASSERT_EQ(keys.size(), 8u);
  for (size_t i = 0; i < 4; ++i) ASSERT_EQ(s.put(ns.id, {keys[i]}, kSlot), 1);
  // Chunks 0 and 1 are seen a second time (read); 2 and 3 are only looked
  // up, which is no sighting.
  for (size_t i = 0; i < 2; ++i) {
    Lease lease(s, ns.id, {keys[i]});
    EXPECT_EQ(check_lease(lease, {keys[i]}, kSlot), "") << i;
  }
  EXPECT_EQ(s.lookup(ns.id, {keys[2], keys[3]}), 2);
  for (size_t i = 4; i < 8; ++i) ASSERT_EQ(s.put(ns.id, {keys[i]}, kSlot), 1);
  cxlpool_kv_location loc{};
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s.lookup_one(ns.id, keys[i], &loc), 1) << i;
    EXPECT_EQ(loc.tier, CXLPOOL_KV_TIER_SSD) << i;
  }
  EXPECT_EQ(s.lookup_one(ns.id, keys[2]), 0);
  EXPECT_EQ(s.lookup_one(ns.id, keys[3]), 0);
  const auto st = store_status();
  ASSERT_EQ(st.tiers.size(), 3u);
  EXPECT_EQ(st.admission_threshold, 2u);
  EXPECT_EQ(st.tiers[2].admissions_rejected, 2u);
  EXPECT_EQ(st.tiers[2].chunks, 2u);
  EXPECT_EQ(st.tiers[1].present, 0) << "cxl_bytes = 0 disables the CXL arena";
}

// ---- restart: the SSD log is the store's memory ----

TEST_F(KvStore, SsdChunksSurviveARestart) {
  start(KvConfig{.dram_slots = 2, .cxl_slots = 0, .admission_threshold = 1});
  const auto toks = tokens(40, 10 * kChunkTokens);
  std::vector<cxlpool_kv_key> keys;
  {
    KvSession s(socket(), "kv-before");
    ASSERT_TRUE(s.ok()) << s.error;
    const auto ns = s.open_namespace();
    keys = s.keys(ns, toks);
    ASSERT_EQ(keys.size(), 10u);
    ASSERT_EQ(s.put_each(ns.id, keys, kSlot - 512), keys.size()) << cxlpool_last_error();
    std::vector<cxlpool_kv_location> locs;
    ASSERT_EQ(s.lookup(ns.id, keys, &locs), 10);
    size_t on_ssd = 0;
    for (const auto& l : locs) on_ssd += l.tier == CXLPOOL_KV_TIER_SSD ? 1 : 0;
    ASSERT_EQ(on_ssd, 8u);
  }
  // A client holding a lease does not hold up a clean stop, which writes
  // what the arenas hold to the log and seals its open region (per-region
  // policy); the second daemon runs in another directory on the same SSD
  // file. The old handle then fails instead of waiting forever.
  KvSession live(socket(), "kv-live");
  ASSERT_TRUE(live.ok()) << live.error;
  const auto live_ns = live.open_namespace();
  Lease held(live, live_ns.id, {keys[9]});
  ASSERT_EQ(held.result, 1);
  restart();
  if (HasFatalFailure()) return;
  EXPECT_LT(live.lookup(live_ns.id, keys), 0);
  held.id = 0;

  // Before any client names it, the namespace is known by its fingerprint.
  const json listed = ctl_json({"kv", "namespaces"});
  ASSERT_TRUE(listed.is_array()) << listed.dump();
  ASSERT_EQ(listed.size(), 1u) << listed.dump();
  EXPECT_EQ(listed[0].at("recovered_only"), true) << listed.dump();
  EXPECT_EQ(listed[0].at("chunks").at("ssd"), keys.size()) << listed.dump();
  EXPECT_EQ(listed[0].at("chunks").at("dram"), 0u) << listed.dump();

  KvSession s(socket(), "kv-after");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto again = s.keys(ns, toks);
  ASSERT_EQ(again.size(), 10u);
  EXPECT_EQ(s.lookup(ns.id, again), 10);
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_TRUE(again[i].lo == keys[i].lo && again[i].hi == keys[i].hi) << i;
    cxlpool_kv_location loc{};
    EXPECT_EQ(s.lookup_one(ns.id, again[i], &loc), 1) << i;
    EXPECT_EQ(loc.tier, CXLPOOL_KV_TIER_SSD) << i;
    Lease lease(s, ns.id, {again[i]});
    EXPECT_EQ(check_lease(lease, {again[i]}, kSlot - 512), "") << i;
  }
  const auto st = store_status();
  EXPECT_EQ(st.tiers[2].errors, 0u);
  // Now the namespace has its name again.
  const json named = ctl_json({"kv", "namespaces"});
  ASSERT_TRUE(named.is_array() && named.size() == 1u) << named.dump();
  EXPECT_EQ(named[0].at("recovered_only"), false) << named.dump();
  EXPECT_EQ(named[0].at("model_id"), "itest-model") << named.dump();
  EXPECT_EQ(named[0].at("fingerprint"), listed[0].at("fingerprint")) << named.dump();
}

// ---- a dead client's leases ----

TEST_F(KvStore, AKilledClientsLeasesAreReleased) {
  start(KvConfig{.dram_slots = 4, .cxl_slots = 0}, false);
  KvSession s(socket(), "kv-owner");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto old_keys = s.keys(ns, tokens(50, 2 * kChunkTokens));
  ASSERT_EQ(s.put(ns.id, old_keys, kSlot), 2);
  const std::string sock = socket();

  // A process leases the two chunks and is killed holding them.
  ForkedChild holder([&](int fd) {
    KvSession c(sock, "kv-holder");
    if (!c.ok()) return 1;
    const auto cns = c.open_namespace();
    Lease lease(c, cns.id, old_keys);
    // And a put it never commits.
    const auto fresh = c.keys(cns, tokens(51, kChunkTokens));
    uint64_t reservation = 0;
    cxlpool_kv_location slot{};
    const int begun = cxlpool_kv_put_begin(c.kv, cns.id, fresh.data(), 1, kSlot, &reservation, &slot);
    const std::string line = "leased " + std::to_string(lease.result) + " " + std::to_string(begun) + "\n";
    (void)!::write(fd, line.data(), line.size());
    ::pause();
    return 0;
  });
  auto line = holder.read_line(20s);
  ASSERT_EQ(line, std::optional<std::string>("leased 2 0"));
  auto admin = connect_admin(socket());
  ASSERT_TRUE(admin);
  EXPECT_EQ(kv_status(*admin).leases, 1u);
  EXPECT_EQ(kv_status(*admin).reservations, 1u);

  // While leased, a stream of new chunks cannot evict them.
  int batch = 0;
  auto put_new = [&](size_t n) {
    const auto k = s.keys(ns, tokens(100 + batch++, n * kChunkTokens));
    for (const auto& key : k) EXPECT_EQ(s.put(ns.id, {key}, kSlot), 1);
  };
  put_new(6);
  EXPECT_EQ(s.lookup(ns.id, old_keys), 2);

  holder.kill(SIGKILL);
  EXPECT_EQ(holder.wait(10s), 128 + SIGKILL);
  ASSERT_TRUE(wait_until([&] { return kv_status(*admin).leases == 0; }, 10s, 10ms)) << daemon_->log();
  EXPECT_EQ(kv_status(*admin).leased_bytes, 0u);
  EXPECT_EQ(kv_status(*admin).reservations, 0u);
  // Now they are ordinary chunks: new puts evict them.
  put_new(4);
  EXPECT_EQ(s.lookup_one(ns.id, old_keys[0]), 0);
  EXPECT_EQ(s.lookup_one(ns.id, old_keys[1]), 0);
}

// ---- quota ----

TEST_F(KvStore, QuotaLimitsLeasesAndReservationsPerUid) {
  start(KvConfig{.quota_bytes = 2 * kSlot, .daemon = "socket_mode = \"0666\"\n"}, false);
  KvSession s(socket(), "kv-quota");
  ASSERT_TRUE(s.ok()) << s.error;
  cxlpool_kv_info info{};
  ASSERT_EQ(cxlpool_kv_get_info(s.kv, &info), 0);
  EXPECT_EQ(info.quota_bytes, 2 * kSlot);
  const auto ns = s.open_namespace("itest-model", nullptr, 0644);  // readable by the other uid below
  const auto keys = s.keys(ns, tokens(60, 3 * kChunkTokens));
  ASSERT_EQ(keys.size(), 3u);

  // Three reserved slots are over the quota; two fit.
  EXPECT_EQ(s.put(ns.id, keys, kSlot), -EDQUOT);
  EXPECT_EQ(s.lookup(ns.id, keys), 0) << "a refused put stores nothing";
  const std::vector<cxlpool_kv_key> two(keys.begin(), keys.begin() + 2);
  ASSERT_EQ(s.put(ns.id, two, kSlot), 2);
  ASSERT_EQ(s.put(ns.id, {keys[2]}, kSlot), 1);
  // Leases count too.
  {
    Lease lease(s, ns.id, two);
    EXPECT_EQ(check_lease(lease, two, kSlot), "");
    Lease more(s, ns.id, {keys[2]});
    EXPECT_EQ(more.result, -EDQUOT);
    uint64_t reservation = 0;
    cxlpool_kv_location slot{};
    const auto extra = s.keys(ns, tokens(61, kChunkTokens));
    EXPECT_EQ(cxlpool_kv_put_begin(s.kv, ns.id, extra.data(), 1, kSlot, &reservation, &slot), -EDQUOT);

    // The quota is per uid: another connection of the same user brings no
    // quota of its own...
    {
      KvSession same(socket(), "kv-quota-same-uid");
      ASSERT_TRUE(same.ok()) << same.error;
      const auto sns = same.open_namespace();
      Lease l(same, sns.id, {keys[2]});
      EXPECT_EQ(l.result, -EDQUOT);
    }
    // ...while another user has one.
    if (::geteuid() == 0) {
      const std::string sock = socket();
      const std::string failures = run_checks_in_child(
          [&](ChildChecks& c) {
            KvSession o(sock, "kv-quota-other");
            CHILD_EXPECT_EQ(c, o.error, 0);
            if (!o.ok()) return;
            const auto ons = o.open_namespace();
            Lease l(o, ons.id, two);
            CHILD_EXPECT_EQ(c, check_lease(l, two, kSlot), std::string());
          },
          RunAs{});
      EXPECT_EQ(failures, "");
    }
  }
  // Released: room again.
  Lease after(s, ns.id, {keys[2]});
  EXPECT_EQ(check_lease(after, {keys[2]}, kSlot), "");
  EXPECT_GE(store_status().quota_rejections, 4u);
}

TEST(KvStoreConfig, TheDefaultQuotaIsAQuarterOfTheDramArena) {
  // No client_quota_bytes: 16 slots of DRAM give 4 slots per uid.
  DaemonProcess daemon(TestConfig{.tables = "[kvstore]\nslot_bytes = 65536\ndram_bytes = 1048576\n"
                                            "cxl_bytes = 0\nput_window_bytes = 1048576\n"}
                           .render());
  ASSERT_TRUE(daemon.start());
  KvSession s(daemon.socket(), "kv-default-quota");
  ASSERT_TRUE(s.ok()) << s.error;
  cxlpool_kv_info info{};
  ASSERT_EQ(cxlpool_kv_get_info(s.kv, &info), 0);
  EXPECT_EQ(info.quota_bytes, 4 * kSlot);
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(62, 5 * kChunkTokens));
  ASSERT_EQ(keys.size(), 5u);
  EXPECT_EQ(s.put(ns.id, keys, kSlot), -EDQUOT) << "five slots reserved at once are over it";
  EXPECT_EQ(s.put(ns.id, std::vector<cxlpool_kv_key>(keys.begin(), keys.begin() + 4), kSlot), 4);
}

TEST_F(KvStore, AnExpiredLeaseIsRevokedAndAnotherClientsPutSucceeds) {
  start(KvConfig{.dram_slots = 2, .cxl_slots = 0, .kvstore = "lease_timeout_ms = 300\n"}, false);
  KvSession holder(socket(), "kv-lease-holder");
  ASSERT_TRUE(holder.ok()) << holder.error;
  const auto ns = holder.open_namespace();
  const auto keys = holder.keys(ns, tokens(63, 2 * kChunkTokens));
  ASSERT_EQ(keys.size(), 2u);
  ASSERT_EQ(holder.put(ns.id, keys, kSlot), 2);
  Lease lease(holder, ns.id, keys);
  ASSERT_EQ(check_lease(lease, keys, kSlot), "");

  KvSession other(socket(), "kv-lease-other");
  ASSERT_TRUE(other.ok()) << other.error;
  const auto ons = other.open_namespace();
  const auto fresh = other.keys(ons, tokens(64, kChunkTokens));
  // Every DRAM slot is leased and there is no CXL arena: no room.
  EXPECT_EQ(other.put(ons.id, fresh, kSlot), -ENOSPC);

  auto admin = connect_admin(socket());
  ASSERT_TRUE(admin);
  // Revoked by the daemon's once-a-second check; 5 s only catches a frozen daemon.
  ASSERT_TRUE(wait_until([&] { return stat(*admin, "kv.leases_expired") == 1; }, 5s)) << daemon_->log();
  EXPECT_EQ(kv_status(*admin).leases, 0u);
  EXPECT_EQ(other.put(ons.id, fresh, kSlot), 1) << "the revoked chunks are evictable again";
  // The holder's release of it is answered as for an unknown lease.
  EXPECT_EQ(lease.release(), -ENOENT);
  EXPECT_NE(daemon_->log().find("lease(s) older than 300 ms revoked"), std::string::npos);
  EXPECT_EQ(line_repeating_its_logger(daemon_->log()), "") << "each line names its component once";
}

// ---- cxlpoolctl kv ----

TEST_F(KvStore, CtlStatusAndNamespacesJson) {
  start(KvConfig{.dram_slots = 4, .cxl_slots = 4});
  KvSession s(socket(), "kv-ctl");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(70, 3 * kChunkTokens));
  ASSERT_EQ(s.put(ns.id, keys, kSlot), 3);
  { Lease lease(s, ns.id, keys); }

  const json st = ctl_json({"kv", "status"});
  ASSERT_TRUE(st.is_object()) << st.dump();
  EXPECT_EQ(st.at("enabled"), true) << st.dump();
  EXPECT_EQ(st.at("eviction"), "lru") << st.dump();
  EXPECT_EQ(st.at("ssd_sync"), "per-region") << st.dump();
  EXPECT_EQ(st.at("puts"), 3u) << st.dump();
  EXPECT_EQ(st.at("gets"), 1u) << st.dump();
  EXPECT_EQ(st.at("slot_bytes"), kSlot) << st.dump();
  EXPECT_EQ(st.at("chunks"), 3u) << st.dump();
  ASSERT_TRUE(st.at("tiers").is_array() && st.at("tiers").size() == 3u) << st.dump();
  const json& dram = st.at("tiers")[0];
  EXPECT_EQ(dram.at("tier"), "dram") << dram.dump();
  EXPECT_EQ(dram.at("capacity"), 4 * kSlot) << dram.dump();
  EXPECT_EQ(dram.at("chunks"), 3u) << dram.dump();
  EXPECT_EQ(dram.at("used"), 3 * kSlot) << dram.dump();
  EXPECT_GT(dram.at("hit_rate").get<double>(), 0.0) << dram.dump();
  for (const char* field : {"evictions", "admissions_rejected", "bytes_written"}) {
    EXPECT_TRUE(dram.contains(field)) << field << " " << dram.dump();
  }
  const json& ssd = st.at("tiers")[2];
  EXPECT_EQ(ssd.at("tier"), "ssd") << ssd.dump();
  EXPECT_EQ(ssd.at("present"), true) << ssd.dump();
  EXPECT_EQ(ssd.at("capacity"), config_.ssd_bytes) << ssd.dump();
  EXPECT_EQ(ssd.at("name"), config_.ssd_path) << ssd.dump();

  const json list = ctl_json({"kv", "namespaces"});
  ASSERT_TRUE(list.is_array() && list.size() == 1u) << list.dump();
  EXPECT_EQ(list[0].at("id"), ns.id) << list.dump();
  EXPECT_EQ(list[0].at("model_id"), "itest-model");
  EXPECT_EQ(list[0].at("layout"), "itest-layout");
  EXPECT_EQ(list[0].at("dtype"), "bf16");
  EXPECT_EQ(list[0].at("chunk_tokens"), kChunkTokens);
  EXPECT_EQ(list[0].at("recovered_only"), false);
  EXPECT_EQ(list[0].at("chunks").at("dram"), 3u) << list.dump();
  EXPECT_EQ(list[0].at("total_bytes"), 3 * kSlot) << list.dump();
  char fp[40];
  std::snprintf(fp, sizeof fp, "%016llx%016llx", static_cast<unsigned long long>(ns.fingerprint_hi),
                static_cast<unsigned long long>(ns.fingerprint_lo));
  EXPECT_EQ(list[0].at("fingerprint"), fp) << list.dump();

  // The human forms name the tiers and the namespace.
  auto text = ctl({"kv", "status"});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("dram"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ssd"), std::string::npos) << text.out;
  auto names = ctl({"kv", "namespaces"});
  EXPECT_EQ(names.exit_code, 0) << names.err;
  EXPECT_NE(names.out.find("itest-model"), std::string::npos) << names.out;
}

TEST_F(KvStore, AdminDropsANamespaceOthersMayNot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a client as another user";
  start(KvConfig{.daemon = kOpenToAll});
  KvSession s(socket(), "kv-drop");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace("itest-model", nullptr, 0644);
  const auto keep_ns = s.open_namespace("itest-kept");
  const auto toks = tokens(80, 3 * kChunkTokens);
  const auto keys = s.keys(ns, toks);
  const auto kept = s.keys(keep_ns, toks);
  ASSERT_EQ(s.put(ns.id, keys, kSlot), 3);
  ASSERT_EQ(s.put(keep_ns.id, kept, kSlot), 3);
  const std::string sock = socket();

  // Another user reads a namespace whose mode lets it, but may not drop it
  // (only its owner or an admin may).
  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        KvSession o(sock, "kv-nobody");
        CHILD_EXPECT_EQ(c, o.error, 0);
        if (!o.ok()) return;
        const auto ons = o.open_namespace();
        CHILD_EXPECT_EQ(c, ons.id, ns.id);
        Lease l(o, ons.id, keys);
        CHILD_EXPECT_EQ(c, check_lease(l, keys, kSlot), std::string());
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  const std::string id = std::to_string(ns.id);
  // Reading the store's state is for everyone.
  for (const char* verb : {"status", "namespaces"}) {
    auto r = ctl({"--json", "kv", verb}, {.run_as = RunAs{}});
    EXPECT_EQ(r.exit_code, 0) << verb << ": " << r.err;
  }
  auto refused = ctl({"kv", "drop", id}, {.run_as = RunAs{}});
  EXPECT_EQ(refused.exit_code, 4) << refused.out << refused.err;
  EXPECT_EQ(s.lookup(ns.id, keys), 3);
  auto unknown = ctl({"kv", "drop", "987654"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.out << unknown.err;

  const json dropped = ctl_json({"kv", "drop", id});
  EXPECT_EQ(dropped.at("chunks_dropped"), 3u) << dropped.dump();
  EXPECT_EQ(dropped.at("chunks_deferred"), 0u) << dropped.dump();
  EXPECT_EQ(s.lookup(ns.id, keys), 0);
  EXPECT_EQ(s.lookup(keep_ns.id, kept), 3) << "other namespaces are untouched";
}

// ---- asynchronous requests and the completion eventfd ----

// Submits one request and reaps until its completion comes back (copied,
// locations dropped); status -ETIMEDOUT when it does not within 20 s.
cxlpool_kv_completion submit_and_wait(KvSession& s, const cxlpool_kv_request& req) {
  cxlpool_kv_completion out{};
  out.status = -ETIMEDOUT;
  if (cxlpool_kv_submit(s.kv, &req, 1) != 1) return out;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < deadline) {
    cxlpool_kv_completion done[4];
    const int n = cxlpool_kv_reap(s.kv, done, 4, 1000);
    if (n < 0) {
      out.status = n;
      return out;
    }
    for (int i = 0; i < n; ++i) {
      if (done[i].user_data != req.user_data) continue;
      out = done[i];
      out.locations = nullptr;
      return out;
    }
  }
  return out;
}

TEST_F(KvStore, AsyncBatchesCompleteThroughTheEventfd) {
  start(KvConfig{.dram_slots = 8, .cxl_slots = 0, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024});
  KvSession s(socket(), "kv-async");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(110, 12 * kChunkTokens));
  ASSERT_EQ(keys.size(), 12u);
  ASSERT_EQ(s.put_each(ns.id, keys, kSlot), keys.size()) << cxlpool_last_error();
  std::vector<cxlpool_kv_location> locs;
  ASSERT_EQ(s.lookup(ns.id, keys, &locs), 12);
  ASSERT_EQ(locs[0].tier, CXLPOOL_KV_TIER_SSD);

  // Six one-chunk gets (four of them SSD reads) and a lookup in one batch.
  std::vector<cxlpool_kv_request> reqs;
  for (size_t i = 0; i < 6; ++i) {
    cxlpool_kv_request r{};
    r.user_data = 100 + i;
    r.op = CXLPOOL_KV_GET;
    r.namespace_id = ns.id;
    r.keys = &keys[i];
    r.n_keys = 1;
    reqs.push_back(r);
  }
  cxlpool_kv_request lookup{};
  lookup.user_data = 1;
  lookup.op = CXLPOOL_KV_LOOKUP;
  lookup.namespace_id = ns.id;
  lookup.keys = keys.data();
  lookup.n_keys = 12;
  reqs.push_back(lookup);
  ASSERT_EQ(cxlpool_kv_submit(s.kv, reqs.data(), reqs.size()), 7);
  EXPECT_EQ(cxlpool_kv_in_flight(s.kv), 7u);
  // A blocking helper meanwhile gets its own answer and takes none of theirs.
  EXPECT_EQ(s.lookup(ns.id, {keys[11]}), 1);
  EXPECT_EQ(cxlpool_kv_in_flight(s.kv), 7u);

  const int efd = cxlpool_kv_eventfd(s.kv);
  ASSERT_GE(efd, 0);
  std::map<uint64_t, uint64_t> leases;  // user_data -> lease
  bool looked_up = false;
  size_t received = 0, sleeps = 0;
  while (received < 7) {
    cxlpool_kv_completion done[3];
    const int n = cxlpool_kv_reap(s.kv, done, 3, 0);
    ASSERT_GE(n, 0);
    for (int j = 0; j < n; ++j) {
      const auto& c = done[j];
      ++received;
      EXPECT_EQ(c.status, 0) << c.user_data;
      if (c.user_data == 1) {
        looked_up = true;
        EXPECT_EQ(c.op, static_cast<uint32_t>(CXLPOOL_KV_LOOKUP));
        EXPECT_EQ(c.result0, 12u);
        EXPECT_EQ(c.n_locations, 12u);
        continue;
      }
      ASSERT_GE(c.user_data, 100u);
      ASSERT_LT(c.user_data, 106u);
      const size_t i = c.user_data - 100;
      EXPECT_EQ(c.op, static_cast<uint32_t>(CXLPOOL_KV_GET));
      EXPECT_EQ(c.result1, 1u) << i;
      EXPECT_NE(c.result0, 0u) << i;
      EXPECT_EQ(leases.count(c.user_data), 0u) << "completed twice: " << i;
      leases[c.user_data] = c.result0;
      ASSERT_EQ(c.n_locations, 1u) << i;
      EXPECT_EQ(c.locations[0].length, kSlot) << i;
      EXPECT_EQ(chunk_mismatch(c.locations[0].data, keys[i], kSlot), "") << i;
    }
    if (n > 0 || received == 7) continue;
    // Nothing there: arm, and sleep on the eventfd only when armed. The
    // daemon must ring it: a long wait here means a lost wake-up.
    const int armed = cxlpool_kv_arm(s.kv);
    ASSERT_GE(armed, 0);
    if (armed == 1) {
      pollfd p{efd, POLLIN, 0};
      ASSERT_EQ(::poll(&p, 1, 20000), 1) << "no wake-up with " << cxlpool_kv_in_flight(s.kv) << " in flight";
      ++sleeps;
    }
  }
  EXPECT_TRUE(looked_up);
  EXPECT_EQ(leases.size(), 6u);
  EXPECT_EQ(cxlpool_kv_in_flight(s.kv), 0u);
  EXPECT_EQ(cxlpool_kv_reap(s.kv, nullptr, 0, 0), 0);

  // Released in one batch.
  std::vector<cxlpool_kv_request> releases;
  for (const auto& [user_data, lease] : leases) {
    cxlpool_kv_request r{};
    r.user_data = 1000 + user_data;
    r.op = CXLPOOL_KV_RELEASE;
    r.param0 = lease;
    releases.push_back(r);
  }
  ASSERT_EQ(cxlpool_kv_submit(s.kv, releases.data(), releases.size()), static_cast<int>(releases.size()));
  size_t released = 0;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (released < releases.size() && std::chrono::steady_clock::now() < deadline) {
    cxlpool_kv_completion done[8];
    const int n = cxlpool_kv_reap(s.kv, done, 8, 1000);
    ASSERT_GE(n, 0);
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(done[j].status, 0) << done[j].user_data;
      EXPECT_EQ(done[j].op, static_cast<uint32_t>(CXLPOOL_KV_RELEASE));
      ++released;
    }
  }
  EXPECT_EQ(released, releases.size());
  EXPECT_EQ(store_status().leases, 0u);
  // A lease is gone once released.
  EXPECT_EQ(cxlpool_kv_release(s.kv, leases.begin()->second), -ENOENT);
}

// ---- recompute or load: the daemon's cut-off and the client's model agree ----

TEST_F(KvStore, LookupCutOffMatchesShouldLoad) {
  start(KvConfig{.dram_slots = 8, .cxl_slots = 0, .admission_threshold = 1});
  KvSession s(socket(), "kv-cost");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(120, 12 * kChunkTokens));
  ASSERT_EQ(s.put_each(ns.id, keys, kSlot), keys.size()) << cxlpool_last_error();
  // Reading chunks 0..3 back from SSD pushes 4..7 (least recent) down:
  // DRAM, SSD, DRAM in runs of 4.
  for (size_t i = 0; i < 4; ++i) {
    Lease lease(s, ns.id, {keys[i]});
    ASSERT_EQ(check_lease(lease, {keys[i]}, kSlot), "") << i;
  }
  std::vector<cxlpool_kv_location> locs;
  ASSERT_EQ(s.lookup(ns.id, keys, &locs), 12);
  for (size_t i = 0; i < 12; ++i) {
    ASSERT_EQ(locs[i].tier, i >= 4 && i < 8 ? CXLPOOL_KV_TIER_SSD : CXLPOOL_KV_TIER_DRAM) << i;
  }

  const uint64_t prompt = 12 * kChunkTokens + 8;
  struct Case {
    double tokens_per_s;
    uint32_t expected;  // with the default tier speeds (DRAM 20 GB/s, SSD 2 GB/s + 100 us)
  };
  // Recomputing a chunk takes 16 s, 16 us, 16 ps: load everything; load the
  // DRAM run before the SSD one (132 us per SSD chunk > 16 us); load nothing.
  for (const Case& c : {Case{1, 12}, Case{1e6, 4}, Case{1e12, 0}}) {
    cxlpool_kv_request r{};
    r.user_data = 7;
    r.op = CXLPOOL_KV_LOOKUP;
    r.flags = CXLPOOL_KV_LOOKUP_COST_CUTOFF;
    r.namespace_id = ns.id;
    r.keys = keys.data();
    r.n_keys = 12;
    r.param0 = prompt;
    r.param1 = static_cast<uint64_t>(c.tokens_per_s);
    const auto done = submit_and_wait(s, r);
    ASSERT_EQ(done.status, 0) << c.tokens_per_s;
    EXPECT_EQ(done.result0, 12u);
    EXPECT_EQ(done.result1, c.expected) << c.tokens_per_s;

    cxlpool_kv_load_query q{};
    q.prompt_tokens = prompt;
    q.chunk_tokens = kChunkTokens;
    q.prefill_tokens_per_s = c.tokens_per_s;
    q.overlap = 0;
    q.chunks = locs.data();
    q.n_chunks = 12;
    cxlpool_kv_load_decision d{};
    EXPECT_EQ(cxlpool_kv_should_load(s.kv, &q, &d), c.expected > 0 ? 1 : 0) << c.tokens_per_s;
    EXPECT_EQ(d.load_chunks, done.result1) << c.tokens_per_s;
  }
}

// ---- namespace drop: leased chunks stay readable until released; tombstones persist ----

TEST_F(KvStore, DropDefersLeasedChunksAndSurvivesARestart) {
  start(KvConfig{.dram_slots = 4, .cxl_slots = 0, .admission_threshold = 1});
  const auto toks = tokens(130, 6 * kChunkTokens);
  {
    KvSession s(socket(), "kv-drop-lease");
    ASSERT_TRUE(s.ok()) << s.error;
    const auto ns = s.open_namespace();
    const auto other = s.open_namespace("itest-kept");
    const auto keys = s.keys(ns, toks);
    const auto kept = s.keys(other, std::vector<uint32_t>(toks.begin(), toks.begin() + 2 * kChunkTokens));
    ASSERT_EQ(s.put_each(ns.id, keys, kSlot), keys.size()) << cxlpool_last_error();
    ASSERT_EQ(s.put(other.id, kept, kSlot), 2);
    // DRAM now holds chunks 4, 5 and the kept ones; 0..3 are on SSD.
    const std::vector<cxlpool_kv_key> tail{keys[4], keys[5]};
    Lease lease(s, ns.id, tail);
    ASSERT_EQ(check_lease(lease, tail, kSlot), "");

    const json dropped = ctl_json({"kv", "drop", std::to_string(ns.id)});
    EXPECT_EQ(dropped.at("namespace_id"), ns.id) << dropped.dump();
    EXPECT_EQ(dropped.at("chunks_dropped"), 4u) << dropped.dump();
    EXPECT_EQ(dropped.at("chunks_deferred"), 2u) << dropped.dump();
    EXPECT_EQ(s.lookup(ns.id, keys), 0);
    // The leased bytes are untouched while the lease lasts.
    EXPECT_EQ(check_lease(lease, tail, kSlot), "");
    EXPECT_EQ(lease.release(), 0);
    EXPECT_EQ(store_status().chunks, 2u);
    EXPECT_EQ(s.lookup_one(ns.id, keys[4]), 0);
  }
  restart();
  if (HasFatalFailure()) return;
  KvSession s(socket(), "kv-drop-after");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto other = s.open_namespace("itest-kept");
  const auto keys = s.keys(ns, toks);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(s.lookup_one(ns.id, keys[i]), 0) << i;
  const auto kept = s.keys(other, std::vector<uint32_t>(toks.begin(), toks.begin() + 2 * kChunkTokens));
  Lease lease(s, other.id, kept);
  EXPECT_EQ(check_lease(lease, kept, kSlot), "");
}

// ---- a corrupt SSD entry is detected and never served ----

TEST_F(KvStore, ACorruptSsdEntryIsNeverServed) {
  start(KvConfig{.dram_slots = 2, .cxl_slots = 0, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024});
  const auto toks = tokens(140, 6 * kChunkTokens);
  std::vector<cxlpool_kv_key> keys;
  {
    KvSession s(socket(), "kv-corrupt");
    ASSERT_TRUE(s.ok()) << s.error;
    const auto ns = s.open_namespace();
    keys = s.keys(ns, toks);
    ASSERT_EQ(s.put_each(ns.id, keys, kSlot), keys.size()) << cxlpool_last_error();
  }
  restart();  // everything is in the log now
  if (HasFatalFailure()) return;
  ASSERT_EQ(daemon_->stop(), 0);

  // Flip one byte in the middle of chunk 2's payload on the device.
  const auto bytes = chunk_bytes(keys[2], kSlot);
  std::ifstream in(config_.ssd_path, std::ios::binary);
  const std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t at = image.find(std::string(reinterpret_cast<const char*>(bytes.data()), 4096));
  ASSERT_NE(at, std::string::npos) << "chunk 2's payload is not in " << config_.ssd_path;
  EXPECT_EQ(image.find(std::string(reinterpret_cast<const char*>(bytes.data()), 4096), at + 1), std::string::npos);
  {
    const int fd = ::open(config_.ssd_path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char flipped = static_cast<char>(image[at + 30000] ^ 0x40);
    EXPECT_EQ(::pwrite(fd, &flipped, 1, static_cast<off_t>(at + 30000)), 1);
    ::fsync(fd);
    ::close(fd);
  }
  restart();
  if (HasFatalFailure()) return;

  KvSession s(socket(), "kv-corrupt-after");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  {
    Lease bad(s, ns.id, {keys[2]});
    EXPECT_NE(bad.result, 1) << "the corrupt chunk was served: " << check_lease(bad, {keys[2]}, kSlot);
  }
  EXPECT_EQ(s.lookup_one(ns.id, keys[2]), 0) << "a corrupt entry leaves the index";
  for (size_t i : {0, 1, 3, 4, 5}) {
    Lease lease(s, ns.id, {keys[i]});
    EXPECT_EQ(check_lease(lease, {keys[i]}, kSlot), "") << i;
  }
  EXPECT_GE(store_status().tiers[2].errors, 1u);
}

// ---- isolation and hostile peers ----

TEST_F(KvStore, ACommittedChunkIsIsolatedFromItsPutWindow) {
  start(KvConfig{}, false);
  KvSession s(socket(), "kv-isolation");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(150, kChunkTokens));
  uint64_t reservation = 0;
  cxlpool_kv_location slot{};
  ASSERT_EQ(cxlpool_kv_put_begin(s.kv, ns.id, keys.data(), 1, kSlot, &reservation, &slot), 0);
  ASSERT_NE(slot.data, nullptr);
  const auto bytes = chunk_bytes(keys[0], kSlot);
  std::memcpy(slot.data, bytes.data(), kSlot);
  ASSERT_EQ(cxlpool_kv_put_commit(s.kv, ns.id, reservation, keys.data(), 1), 1);
  // The client scribbles over the window slot after the commit: the stored
  // chunk is a copy and does not change.
  std::memset(slot.data, 0xA5, kSlot);
  Lease lease(s, ns.id, keys);
  EXPECT_EQ(check_lease(lease, keys, kSlot), "");
  EXPECT_NE(lease.locs[0].data, slot.data);
  // A reservation cannot be committed twice.
  EXPECT_EQ(cxlpool_kv_put_commit(s.kv, ns.id, reservation, keys.data(), 1), -ENOENT);
}

// The KV data path opened on the raw control connection, the ring mapped
// writable as a client would: for requests a well-behaved client never sends.
struct RawRing {
  std::unique_ptr<Connection> conn;
  std::vector<UniqueFd> fds;  // ring memfd, SQ doorbell, CQ doorbell, put window
  std::byte* base = nullptr;
  uint64_t bytes = 0;

  RawRing() = default;
  RawRing(const RawRing&) = delete;
  RawRing& operator=(const RawRing&) = delete;
  ~RawRing() {
    if (base != nullptr) ::munmap(base, bytes);
  }
  testing::AssertionResult open(const std::string& socket, const std::string& name) {
    conn = connect_admin(socket, name);
    if (!conn) return testing::AssertionFailure() << "connect";
    auto opened = conn->call(proto::KvOpen{});
    if (!opened) return testing::AssertionFailure() << "KvOpen: " << opened.error().message;
    const auto* reply = std::get_if<proto::KvOpenReply>(&opened->envelope.message);
    if (reply == nullptr || opened->fds.size() != 4) return testing::AssertionFailure() << "KvOpen reply";
    fds = std::move(opened->fds);
    bytes = reply->ring_bytes;
    void* mem = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0].get(), 0);
    if (mem == MAP_FAILED) return testing::AssertionFailure() << "mmap: " << std::strerror(errno);
    base = static_cast<std::byte*>(mem);
    return testing::AssertionSuccess();
  }
  proto::KvRingHeader* header() const { return reinterpret_cast<proto::KvRingHeader*>(base); }
  void doorbell() const {
    const uint64_t one = 1;
    (void)!::write(fds[1].get(), &one, sizeof one);
  }
  // Publishes one request with no keys as entry `index`.
  void publish(uint64_t index, const proto::KvRequest& r) const {
    std::memcpy(base + header()->sq_ring_offset + (index % header()->sq_entries) * sizeof r, &r, sizeof r);
    __atomic_store_n(&header()->sq_producer, index + 1, __ATOMIC_RELEASE);
    doorbell();
  }
  uint64_t completions() const { return __atomic_load_n(&header()->cq_producer, __ATOMIC_ACQUIRE); }
  proto::KvCompletion completion(uint64_t index) const {
    proto::KvCompletion c{};
    std::memcpy(&c, base + header()->cq_ring_offset + (index % header()->cq_entries) * sizeof c, sizeof c);
    return c;
  }
};

TEST_F(KvStore, MalformedRequestsAreAnsweredEinval) {
  start(KvConfig{}, false);
  auto admin = connect_admin(socket());
  ASSERT_TRUE(admin);
  RawRing raw;
  ASSERT_TRUE(raw.open(socket(), "kv-malformed"));
  // A lookup without keys: a known op, the wrong key count.
  proto::KvRequest no_keys{};
  no_keys.request_id = 76;
  no_keys.op = static_cast<uint8_t>(proto::KvOp::kLookup);
  raw.publish(0, no_keys);
  ASSERT_TRUE(wait_until([&] { return raw.completions() == 1; }, 10s)) << daemon_->log();
  EXPECT_EQ(raw.completion(0).request_id, 76u);
  EXPECT_EQ(raw.completion(0).status, -EINVAL);
  // An unknown op (docs/protocol.md §9.2: answered with -EINVAL, the ring
  // stays usable).
  proto::KvRequest unknown{};
  unknown.request_id = 77;
  unknown.op = 99;
  raw.publish(1, unknown);
  EXPECT_TRUE(wait_until([&] { return raw.completions() == 2; }, 5s))
      << "no answer to an unknown op; ring_broken = " << stat(*admin, "kv.ring_broken");
  EXPECT_EQ(raw.completion(1).request_id, 77u);
  EXPECT_EQ(raw.completion(1).status, -EINVAL);
  EXPECT_EQ(stat(*admin, "kv.ring_malformed_requests"), 2u);
  EXPECT_EQ(stat(*admin, "kv.ring_broken"), 0u);
}

TEST_F(KvStore, AHostileRingIsQuarantinedAndOthersCarryOn) {
  start(KvConfig{}, false);
  auto admin = connect_admin(socket());
  ASSERT_TRUE(admin);
  // A producer index far past the ring's size quarantines it.
  RawRing ahead;
  ASSERT_TRUE(ahead.open(socket(), "kv-ahead"));
  __atomic_store_n(&ahead.header()->sq_producer, 4ull * ahead.header()->sq_entries, __ATOMIC_RELEASE);
  ahead.doorbell();
  EXPECT_TRUE(wait_until([&] { return stat(*admin, "kv.ring_broken") == 1; }, 10s)) << daemon_->log();

  // Random bytes over a whole ring (header, entries, slabs), several times.
  RawRing noise;
  ASSERT_TRUE(noise.open(socket(), "kv-noise"));
  uint64_t state = 160;
  for (int round = 0; round < 8; ++round) {
    for (uint64_t i = 0; i + 8 <= noise.bytes; i += 8) {
      const uint64_t word = splitmix(state);
      std::memcpy(noise.base + i, &word, 8);
    }
    noise.doorbell();
  }
  EXPECT_TRUE(wait_until([&] { return stat(*admin, "kv.ring_broken") == 2; }, 10s)) << daemon_->log();

  // The daemon and well-behaved clients carry on.
  KvSession s(socket(), "kv-good");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, tokens(160, 4 * kChunkTokens));
  ASSERT_EQ(s.put(ns.id, keys, kSlot), 4);
  Lease lease(s, ns.id, keys);
  EXPECT_EQ(check_lease(lease, keys, kSlot), "");
  EXPECT_TRUE(daemon_->running());
  // The quarantined connections' control sockets still work.
  EXPECT_TRUE(ahead.conn->call_for<proto::StatusReply>(proto::StatusRequest{}).has_value());
}

// ---- several clients at once over every tier ----

TEST_F(KvStore, ConcurrentClientsNeverSeeWrongBytes) {
  start(KvConfig{.dram_slots = 8, .cxl_slots = 8, .admission_threshold = 1, .ssd_region_bytes = 256 * 1024});
  const std::string sock = socket();
  constexpr size_t kKeys = 32;
  const auto toks = tokens(170, kKeys * kChunkTokens);
  // Each process reads a random prefix of one shared sequence, checks every
  // leased chunk, stores what was missing, and releases; three at once keep
  // chunks moving between DRAM, CXL and SSD under each other's leases.
  auto worker = [&](uint64_t seed) {
    return [&, seed](ChildChecks& c) {
      KvSession s(sock, "kv-worker-" + std::to_string(seed));
      CHILD_EXPECT_EQ(c, s.error, 0);
      if (!s.ok()) return;
      const auto ns = s.open_namespace();
      const auto keys = s.keys(ns, toks);
      CHILD_EXPECT_EQ(c, keys.size(), kKeys);
      uint64_t state = seed;
      for (int round = 0; round < 100 && c.ok(); ++round) {
        const size_t n = 1 + splitmix(state) % 4;
        const size_t start = splitmix(state) % (kKeys - n + 1);
        const std::vector<cxlpool_kv_key> want(keys.begin() + start, keys.begin() + start + n);
        Lease lease(s, ns.id, want);
        CHILD_EXPECT(c, lease.result >= 0 && lease.result <= static_cast<int>(n));
        for (int i = 0; i < lease.result; ++i) {
          const std::string bad = chunk_mismatch(lease.locs[i].data, want[i], kSlot);
          CHILD_EXPECT_EQ(c, bad, std::string());
        }
        if (lease.result >= 0 && lease.result < static_cast<int>(n)) {
          const std::vector<cxlpool_kv_key> missing(want.begin() + lease.result, want.end());
          const int put = s.put(ns.id, missing, kSlot);
          // Every DRAM slot may be leased by the others right now.
          CHILD_EXPECT(c, put >= 0 || put == -ENOSPC || put == -EAGAIN);
        }
        CHILD_EXPECT_EQ(c, lease.release(), 0);
      }
    };
  };
  std::vector<std::unique_ptr<ForkedChild>> workers;
  for (uint64_t seed : {1, 2, 3}) {
    workers.push_back(std::make_unique<ForkedChild>([&, seed](int fd) {
      ChildChecks checks(fd);
      worker(seed)(checks);
      return checks.ok() ? 0 : 1;
    }));
  }
  for (auto& w : workers) {
    const std::string failures = w->read_all(60s);
    EXPECT_EQ(w->wait(10s), 0) << failures;
    EXPECT_EQ(failures, "");
  }
  // Nothing was lost (the SSD tier admits everything and has room) and
  // nothing is held.
  KvSession s(socket(), "kv-final");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, toks);
  const auto st = store_status();
  EXPECT_EQ(st.leases, 0u);
  EXPECT_EQ(st.reservations, 0u);
  EXPECT_EQ(st.tiers[2].errors, 0u);
  size_t stored = 0;
  for (const auto& k : keys) {
    if (s.lookup_one(ns.id, k) != 1) continue;
    ++stored;
    Lease lease(s, ns.id, {k});
    EXPECT_EQ(check_lease(lease, {k}, kSlot), "") << key_text(k);
  }
  EXPECT_GT(stored, 0u);
}

// The commit's copies on worker threads (the default: half the cores, 1-4)
// or on the event loop (0) store the same bytes; per-commit write-through
// finishes after the workers' copies, before the answer.
TEST_F(KvStore, CommitWorkersStoreWhatTheLoopStores) {
  for (const int workers : {0, 3}) {
    SCOPED_TRACE("commit_workers = " + std::to_string(workers));
    start(KvConfig{.dram_slots = 16,
                   .cxl_slots = 0,
                   .ssd_sync = "per-commit",
                   .kvstore = "commit_workers = " + std::to_string(workers) + "\n"});
    {
      KvSession s(socket(), "kv-commit-workers");
      ASSERT_TRUE(s.ok()) << s.error;
      const auto ns = s.open_namespace();
      const auto keys = s.keys(ns, tokens(180 + workers, 12 * kChunkTokens));
      ASSERT_EQ(keys.size(), 12u);
      ASSERT_EQ(s.put(ns.id, keys, kSlot), 12) << cxlpool_last_error();
      ASSERT_EQ(s.lookup(ns.id, keys), 12);
      Lease lease(s, ns.id, keys);
      EXPECT_EQ(check_lease(lease, keys, kSlot), "");
      EXPECT_EQ(lease.release(), 0);
      auto admin = connect_admin(socket());
      ASSERT_TRUE(admin);
      // With workers, the first chunk of a commit that finds no copy out is
      // copied by the loop at once; the other eleven go to the workers.
      EXPECT_EQ(stat(*admin, "kv.commit_copies_offloaded"), workers == 0 ? 0u : 11u);
      EXPECT_EQ(stat(*admin, "kv.commits_in_flight"), 0u);
      const auto st = kv_status(*admin);
      EXPECT_EQ(st.reservations, 0u);
      EXPECT_EQ(st.puts, 12u);
      // Written through before the answer: the SSD holds every chunk.
      EXPECT_EQ(stat(*admin, "kv.tier.ssd.chunks"), 12u);
    }
    EXPECT_EQ(daemon_->stop(), 0) << daemon_->log();
  }
}

// ---- configuration ----

TEST(KvStoreConfig, DisabledStoreAnswersEnotsup) {
  DaemonProcess daemon(TestConfig{.tables = "[kvstore]\nenabled = false\n"}.render());
  ASSERT_TRUE(daemon.start());
  cxlpool_client* client = nullptr;
  ASSERT_EQ(cxlpool_connect(daemon.socket().c_str(), "kv-off", &client), 0);
  cxlpool_kv* kv = nullptr;
  EXPECT_EQ(cxlpool_kv_open(client, nullptr, &kv), -ENOTSUP);
  EXPECT_EQ(kv, nullptr);
  cxlpool_disconnect(client);
  auto r = run_program({ctl_binary(), "--socket", daemon.socket(), "--json", "kv", "status"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out).at("enabled"), false) << r.out;
  auto text = run_program({ctl_binary(), "--socket", daemon.socket(), "kv", "status"});
  EXPECT_NE(text.out.find("disabled"), std::string::npos) << text.out;
}

TEST(KvStoreConfig, BadValuesStopTheDaemonNamingFileLineAndKey) {
  DaemonProcess dir(TestConfig{}.render());
  expect_configs_rejected(dir, {{"[kvstore]\nslot_bytes = 1000\n", ":2: kvstore.slot_bytes:"},
                                {"[kvstore]\nssd_sync = \"sometimes\"\n", ":2: kvstore.ssd_sync:"},
                                {"[kvstore]\neviction = \"fifo\"\n", ":2: kvstore.eviction:"},
                                {"[kvstore]\nno_such = 1\n", ":2: kvstore.no_such:"}});
}

// ---- durability: kill -9 during a stream of per-commit puts ----

TEST(KvDurability, KillNineKeepsEveryAcknowledgedCommit) {
  KvConfig config{.dram_slots = 2, .cxl_slots = 0, .admission_threshold = 1,
                  .ssd_bytes = 64 * kMiB, .ssd_sync = "per-commit"};
  DaemonProcess first(TestConfig{}.render());
  config.ssd_path = first.dir() + "/kv-ssd.img";
  first.write_config(config.render());
  ASSERT_TRUE(first.start());
  const std::string sock = first.socket();

  // Enough keys that the stream never wraps the SSD log (64 regions of ~15
  // entries); the daemon is killed long before the end.
  constexpr size_t kStream = 600;
  const auto toks = tokens(90, kStream * kChunkTokens);
  auto length_of = [](size_t i) { return kSlot - 64 * (i % 7); };

  // The writer reports each chunk after its commit completed: "ack I".
  ForkedChild writer([&](int fd) {
    KvSession s(sock, "kv-stream");
    if (!s.ok()) return 1;
    const auto ns = s.open_namespace();
    const auto keys = s.keys(ns, toks);
    if (keys.size() != kStream) return 2;
    for (size_t i = 0; i < kStream; ++i) {
      const int rc = s.put(ns.id, {keys[i]}, length_of(i));
      const std::string line = (rc == 1 ? "ack " : "fail " + std::to_string(rc) + " ") + std::to_string(i) + "\n";
      (void)!::write(fd, line.data(), line.size());
      if (rc != 1) return 0;
    }
    return 0;
  });
  std::set<size_t> acked;
  std::optional<size_t> failed_at;
  auto take = [&](const std::string& line) {
    size_t i = 0;
    if (std::sscanf(line.c_str(), "ack %zu", &i) == 1) {
      acked.insert(i);
    } else {
      failed_at = acked.size();
    }
  };
  while (acked.size() < 40) {
    auto line = writer.read_line(30s);
    ASSERT_TRUE(line.has_value()) << "the writer stopped early\n" << first.log();
    take(*line);
    ASSERT_FALSE(failed_at.has_value()) << *line << "\n" << first.log();
  }
  first.send_signal(SIGKILL);
  EXPECT_EQ(first.wait_exit(10s), 128 + SIGKILL);
  // Commits acknowledged before the kill are still reported.
  while (auto line = writer.read_line(30s)) take(*line);
  EXPECT_EQ(writer.wait(10s), 0);
  EXPECT_TRUE(failed_at.has_value()) << "the stream ended before the kill";
  // Acknowledged in order, without holes.
  ASSERT_FALSE(acked.empty());
  EXPECT_EQ(*acked.rbegin() + 1, acked.size());

  DaemonProcess second(TestConfig{}.render());
  second.write_config(config.render());
  ASSERT_TRUE(second.start());
  KvSession s(second.socket(), "kv-verify");
  ASSERT_TRUE(s.ok()) << s.error;
  const auto ns = s.open_namespace();
  const auto keys = s.keys(ns, toks);
  ASSERT_EQ(keys.size(), kStream);
  size_t missing = 0, corrupt = 0;
  std::string first_problem;
  // Every acknowledged chunk is there with its bytes; the one in flight at
  // the kill may be there or not, but never damaged.
  for (size_t i = 0; i <= *acked.rbegin() + 1 && i < kStream; ++i) {
    Lease lease(s, ns.id, {keys[i]});
    if (lease.result == 0 && acked.count(i) == 0) continue;
    if (lease.result != 1) {
      ++missing;
      if (first_problem.empty()) first_problem = "chunk " + std::to_string(i) + ": get " + std::to_string(lease.result);
      continue;
    }
    const std::string bad = check_lease(lease, {keys[i]}, length_of(i));
    if (!bad.empty()) {
      ++corrupt;
      if (first_problem.empty()) first_problem = "chunk " + std::to_string(i) + ": " + bad;
    }
  }
  EXPECT_EQ(missing, 0u) << first_problem << " (" << acked.size() << " acknowledged)";
  EXPECT_EQ(corrupt, 0u) << first_problem;
  // Nothing beyond the stream's position exists.
  const size_t next = *acked.rbegin() + 2;
  if (next < kStream) {
    EXPECT_EQ(s.lookup_one(ns.id, keys[next]), 0);
  }
}

}  // namespace
}  // namespace cxlpool::integration
