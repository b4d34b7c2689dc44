// SPDX-License-Identifier: Apache-2.0
// Tenant isolation of the KV store through the real daemon, with root and
// `nobody` as the two tenants: a private namespace can neither be opened nor
// read by the other uid, through requests or through any memory the other
// process maps; a 0644 namespace is read zero-copy; a slot that passes from
// one namespace to another leaves none of the new holder's bytes in the old
// one's view; and no descriptor a client receives can be reopened writable.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <string_view>
#include <sstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"
#include "daemon_process.hpp"
#include "kv_connection.hpp"
#include "pool_queries.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

constexpr uint64_t kSlot = 64 * 1024;
constexpr uint32_t kChunkTokens = 16;

std::string isolation_config(uint64_t dram_slots, uint64_t cxl_slots) {
  std::ostringstream t;
  t << "[kvstore]\n"
    << "slot_bytes = " << kSlot << "\n"
    << "dram_bytes = " << dram_slots * kSlot << "\n"
    << "cxl_bytes = " << cxl_slots * kSlot << "\n"
    << "put_window_bytes = " << 4 * kSlot << "\n"
    // The tests fill every slot as one uid: no per-uid quota in the way.
    << "client_quota_bytes = 0\n";
  // A socket `nobody` may connect to; root is the only admin.
  return TestConfig{.daemon = kOpenToAll, .tables = t.str()}.render();
}

// A chunk: `marker` (64 bytes, unique per tenant) over and over.
std::string marker_of(const char* tenant) {
  std::string m = std::string("cxlpool-kv-isolation-marker-") + tenant + "-";
  while (m.size() < 64) m += static_cast<char>('a' + m.size() % 26);
  return m.substr(0, 64);
}

std::vector<std::byte> chunk_of(const std::string& marker) {
  std::vector<std::byte> out(kSlot);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<std::byte>(marker[i % marker.size()]);
  return out;
}

std::vector<uint32_t> prompt(uint32_t seed, size_t chunks) {
  std::vector<uint32_t> t(chunks * kChunkTokens);
  for (size_t i = 0; i < t.size(); ++i) t[i] = seed * 100000 + static_cast<uint32_t>(i);
  return t;
}

struct Tenant : KvConnection {
  explicit Tenant(const std::string& socket) : KvConnection(socket, "kv-isolation") {}

  int open(const char* model, uint32_t mode, cxlpool_kv_namespace& ns) {
    const auto spec = kv_namespace_spec(model, "itest-layout", kChunkTokens, mode);
    return cxlpool_kv_namespace_open(kv, &spec, &ns);
  }
  std::vector<cxlpool_kv_key> keys(const cxlpool_kv_namespace& ns, const std::vector<uint32_t>& toks) const {
    return chunk_keys(ns, toks);
  }
  int put(uint64_t ns, const std::vector<cxlpool_kv_key>& keys, const std::string& marker) {
    const auto bytes = chunk_of(marker);
    std::vector<const void*> data(keys.size(), bytes.data());
    return cxlpool_kv_put(kv, ns, keys.data(), static_cast<uint32_t>(keys.size()), data.data(), kSlot);
  }
};

// A process that dropped root is not dumpable, which makes its own
// /proc/self/{mem,fd} root's; the tenant may look at itself again.
void allow_proc_self() { (void)::prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); }

// Every shared mapping of this process (what the daemon's descriptors gave
// it: rings, put window, views), scanned through /proc/self/mem so that a
// hole reads as an error, not a fault. Private memory is skipped: the
// process built the marker there itself to know what to look for.
// Returns where `marker` was found, "" when nowhere.
std::string find_in_shared_mappings(const std::string& marker) {
  allow_proc_self();
  std::ifstream maps("/proc/self/maps");
  const int mem = ::open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
  if (mem < 0) return "cannot open /proc/self/mem";
  std::string line, found;
  std::vector<char> buf(1 << 20);
  while (found.empty() && std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (perms[0] != 'r' || perms[3] != 's') continue;
    for (unsigned long long at = lo; at < hi && found.empty(); at += buf.size()) {
      const size_t want = static_cast<size_t>(std::min<unsigned long long>(buf.size(), hi - at));
      const ssize_t got = ::pread(mem, buf.data(), want, static_cast<off_t>(at));
      if (got <= 0) continue;
      if (std::string_view(buf.data(), static_cast<size_t>(got)).find(marker) != std::string_view::npos) {
        found = line;
      }
    }
  }
  ::close(mem);
  return found;
}

// The tenant's children are forks of the test, which holds root's KV
// session: its shared mappings (root's views, root's put window, still
// written by root) would be in the child too. A tenant starts without them.
void drop_inherited_shared_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<unsigned long long, unsigned long long>> ranges;
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line.c_str(), "%llx-%llx %4s", &lo, &hi, perms) != 3) continue;
    if (perms[3] == 's' && line.find("/memfd:") != std::string::npos) ranges.emplace_back(lo, hi);
  }
  for (const auto& [lo, hi] : ranges) ::munmap(reinterpret_cast<void*>(lo), static_cast<size_t>(hi - lo));
}

// Opens `model`'s namespace over a raw connection, which keeps the view
// descriptors the library would close after mapping them, and tries to
// reopen each through /proc/self/fd (read-write, write-only, read-only) and
// to map it writable. "" when every attempt failed as it must, else what
// happened; *views gets the number of descriptors received.
std::string reopen_views(const std::string& socket, const std::string& model, size_t* views) {
  *views = 0;
  allow_proc_self();
  auto conn = Connection::open(socket, "kv-isolation-raw");
  if (!conn) return "connect: " + conn.error().message;
  proto::KvNamespaceOpen open;
  open.model_id = model;
  open.layout = "itest-layout";
  open.dtype = "bf16";
  open.chunk_tokens = kChunkTokens;
  auto received = (*conn)->call(open);
  if (!received) return "KvNamespaceOpen: " + received.error().message;
  *views = received->fds.size();
  std::string problems;
  for (const UniqueFd& fd : received->fds) {
    const std::string link = "/proc/self/fd/" + std::to_string(fd.get());
    for (const int flags : {O_RDWR, O_WRONLY, O_RDONLY}) {
      const int again = ::open(link.c_str(), flags | O_CLOEXEC);
      if (again >= 0) {
        ::close(again);
        problems += link + " reopened with flags " + std::to_string(flags) + "; ";
      } else if (errno != EACCES) {
        problems += link + ": " + std::strerror(errno) + "; ";
      }
    }
    if ((::fcntl(fd.get(), F_GETFL) & O_ACCMODE) != O_RDONLY) problems += link + " is not read-only; ";
    void* w = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
    if (w != MAP_FAILED) {
      ::munmap(w, 4096);
      problems += link + " mapped writable; ";
    }
  }
  return problems;
}

class KvIsolation : public testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to run a second tenant as nobody";
  }
  void start(uint64_t dram_slots, uint64_t cxl_slots) {
    daemon_ = std::make_unique<DaemonProcess>(isolation_config(dram_slots, cxl_slots));
    ASSERT_TRUE(daemon_->start());
  }
  std::unique_ptr<DaemonProcess> daemon_;
};

TEST_F(KvIsolation, AnotherUidCannotOpenOrReadAPrivateNamespace) {
  start(16, 16);
  Tenant root(daemon_->socket());
  ASSERT_EQ(root.error, 0);
  cxlpool_kv_namespace priv{}, pub{};
  ASSERT_EQ(root.open("root-private", 0, priv), 0) << cxlpool_last_error();
  ASSERT_EQ(root.open("root-public", 0644, pub), 0) << cxlpool_last_error();
  const std::string secret = marker_of("root-secret");
  const std::string shared = marker_of("root-shared");
  const auto priv_keys = root.keys(priv, prompt(1, 4));
  const auto pub_keys = root.keys(pub, prompt(2, 3));
  ASSERT_EQ(root.put(priv.id, priv_keys, secret), 4);
  ASSERT_EQ(root.put(pub.id, pub_keys, shared), 3);
  const std::string sock = daemon_->socket();
  const uint64_t priv_id = priv.id;

  const std::string failures = run_checks_in_child(
      [&](ChildChecks& c) {
        drop_inherited_shared_mappings();
        Tenant other(sock);
        CHILD_EXPECT_EQ(c, other.error, 0);
        if (other.error != 0) return;
        // The private namespace: not opened, whatever mode is asked for.
        cxlpool_kv_namespace ns{};
        CHILD_EXPECT_EQ(c, other.open("root-private", 0, ns), -EACCES);
        CHILD_EXPECT(c, std::string(cxlpool_last_error()).find("belongs to uid 0") != std::string::npos);
        CHILD_EXPECT_EQ(c, other.open("root-private", 0666, ns), -EACCES);
        // Its id and keys (computable by anyone who knows the spec and the
        // tokens) used without an open: every request refused.
        cxlpool_kv_location locs[4];
        uint64_t lease = 0;
        CHILD_EXPECT_EQ(c, cxlpool_kv_lookup(other.kv, priv_id, priv_keys.data(), 4, locs), -EACCES);
        CHILD_EXPECT_EQ(c, cxlpool_kv_get(other.kv, priv_id, priv_keys.data(), 4, &lease, locs), -EACCES);
        CHILD_EXPECT_EQ(c, cxlpool_kv_prefetch(other.kv, priv_id, priv_keys.data(), 4), -EACCES);
        CHILD_EXPECT_EQ(c, cxlpool_kv_delete(other.kv, priv_id, priv_keys.data(), 4), -EACCES);
        // The arena regions themselves are closed to clients.
        cxlpool_region* r = nullptr;
        CHILD_EXPECT_EQ(c, cxlpool_named_open(other.client, "cxlpool-kv-dram", 0, &r), -EACCES);

        // The public namespace: read zero-copy, never written.
        cxlpool_kv_namespace pns{};
        CHILD_EXPECT_EQ(c, other.open("root-public", 0, pns), 0);
        CHILD_EXPECT_EQ(c, pns.id, pub.id);
        cxlpool_kv_location got[3];
        CHILD_EXPECT_EQ(c, cxlpool_kv_get(other.kv, pns.id, pub_keys.data(), 3, &lease, got), 3);
        const auto expect = chunk_of(shared);
        for (const auto& l : got) {
          CHILD_EXPECT(c, l.data != nullptr && l.length == kSlot && std::memcmp(l.data, expect.data(), kSlot) == 0);
        }
        CHILD_EXPECT_EQ(c, cxlpool_kv_release(other.kv, lease), 0);
        CHILD_EXPECT_EQ(c, other.put(pns.id, other.keys(pns, prompt(3, 1)), marker_of("nobody")), -EACCES);
        // Someone else's keys under its own readable namespace: nothing.
        CHILD_EXPECT_EQ(c, cxlpool_kv_lookup(other.kv, pns.id, priv_keys.data(), 4, locs), 0);

        // Nothing of the private namespace in any memory it maps.
        CHILD_EXPECT_EQ(c, find_in_shared_mappings(secret), std::string());
        CHILD_EXPECT(c, !find_in_shared_mappings(shared).empty());  // the scan does see views
        // The views it receives cannot be reopened, writable or at all.
        size_t views = 0;
        CHILD_EXPECT_EQ(c, reopen_views(sock, "root-public", &views), std::string());
        CHILD_EXPECT_EQ(c, views, size_t{2});  // the public namespace's DRAM and CXL views
      },
      RunAs{});
  EXPECT_EQ(failures, "");
  // Root's chunks are all there, unchanged.
  cxlpool_kv_location locs[4];
  uint64_t lease = 0;
  ASSERT_EQ(cxlpool_kv_get(root.kv, priv.id, priv_keys.data(), 4, &lease, locs), 4);
  const auto expect = chunk_of(secret);
  for (const auto& l : locs) EXPECT_EQ(std::memcmp(l.data, expect.data(), kSlot), 0);
  EXPECT_EQ(cxlpool_kv_release(root.kv, lease), 0);
}

TEST_F(KvIsolation, ASlotPassingToAnotherNamespaceLeavesNoBytesBehind) {
  // Two DRAM slots and no lower tier: every new chunk evicts an old one.
  start(2, 0);
  Tenant root(daemon_->socket());
  ASSERT_EQ(root.error, 0);
  cxlpool_kv_namespace pub{};
  ASSERT_EQ(root.open("root-public", 0644, pub), 0) << cxlpool_last_error();
  const std::string shared = marker_of("before");
  const std::string secret = marker_of("after");
  const auto pub_keys = root.keys(pub, prompt(4, 2));
  ASSERT_EQ(root.put(pub.id, pub_keys, shared), 2);
  const std::string sock = daemon_->socket();
  int go[2];
  ASSERT_EQ(::pipe2(go, O_CLOEXEC), 0);

  // nobody maps the public namespace and reads both chunks, then waits while
  // root's private chunks take their slots.
  ForkedChild reader(
      [&](int report) -> int {
        ::close(go[1]);
        auto say = [&](const std::string& s) { (void)!::write(report, (s + "\n").data(), s.size() + 1); };
        drop_inherited_shared_mappings();
        Tenant other(sock);
        cxlpool_kv_namespace ns{};
        if (other.error != 0 || other.open("root-public", 0, ns) != 0) {
          say(std::string("setup: ") + cxlpool_last_error());
          return 1;
        }
        cxlpool_kv_location got[2];
        uint64_t lease = 0;
        if (cxlpool_kv_get(other.kv, ns.id, pub_keys.data(), 2, &lease, got) != 2) {
          say(std::string("get: ") + cxlpool_last_error());
          return 1;
        }
        const void* where[2] = {got[0].data, got[1].data};
        (void)cxlpool_kv_release(other.kv, lease);
        say("ready");
        char byte = 0;
        if (::read(go[0], &byte, 1) != 1) return 1;
        std::string problems;
        const std::string seen = find_in_shared_mappings(secret);
        if (!seen.empty()) problems += "the new holder's bytes are visible in " + seen + "; ";
        for (const void* p : where) {
          const auto* b = static_cast<const unsigned char*>(p);
          for (uint64_t i = 0; i < kSlot; i += 4096) {
            if (b[i] != 0) {
              problems += "the old view still holds a byte at " + std::to_string(i) + "; ";
              break;
            }
          }
        }
        say(problems.empty() ? "clean" : problems);
        return problems.empty() ? 0 : 1;
      },
      RunAs{});
  ::close(go[0]);
  ASSERT_EQ(reader.read_line(20s).value_or("timeout"), "ready");

  cxlpool_kv_namespace priv{};
  ASSERT_EQ(root.open("root-private", 0, priv), 0) << cxlpool_last_error();
  const auto priv_keys = root.keys(priv, prompt(5, 2));
  ASSERT_EQ(root.put(priv.id, priv_keys, secret), 2);
  EXPECT_EQ(cxlpool_kv_lookup(root.kv, pub.id, pub_keys.data(), 2, nullptr), 0) << "the public chunks were evicted";
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ::close(go[1]);
  EXPECT_EQ(reader.read_line(20s).value_or("timeout"), "clean");
  EXPECT_EQ(reader.wait(20s), 0);
}

}  // namespace
}  // namespace cxlpool::integration
