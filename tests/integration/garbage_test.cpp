// SPDX-License-Identifier: Apache-2.0
// Hostile input on the control socket: random datagrams, corrupted headers,
// requests out of order, descriptors attached, over many connections. The
// daemon must survive it, keep serving, and hold on to nothing afterwards:
// no region, no byte, no descriptor.
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <iostream>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/proto/messages.hpp"
#include "daemon_process.hpp"
#include "pool_queries.hpp"
#include "running_pool.hpp"
#include "support/raw_socket.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;

constexpr int kDatagrams = 2000;
constexpr size_t kConnections = 50;
constexpr uint64_t kDefaultSeed = 0x5eed2024;

uint64_t fuzz_seed() {
  const char* text = std::getenv("CXLPOOL_FUZZ_SEED");
  return text != nullptr ? std::strtoull(text, nullptr, 0) : kDefaultSeed;
}

class Garbage {
 public:
  Garbage(uint64_t seed, uint32_t emu) : rng_(seed), emu_(emu) {}

  uint64_t next(uint64_t bound) { return bound == 0 ? 0 : rng_() % bound; }

  // Mostly small, sometimes up to and past the daemon's 64 KiB limit.
  size_t length() {
    const uint64_t pick = next(10);
    if (pick < 6) return next(257);
    if (pick < 9) return next(4097);
    return next(70001);
  }

  std::vector<std::byte> random_bytes(size_t n) {
    std::vector<std::byte> out(n);
    for (auto& b : out) b = static_cast<std::byte>(rng_());
    return out;
  }

  proto::Message valid_request() {
    switch (next(11)) {
      case 0: return proto::StatusRequest{};
      case 1: return proto::TiersRequest{};
      case 2: return proto::RegionAlloc{emu_, 4096 * (1 + next(16)), 0};
      case 3: return proto::RegionAlloc{emu_, 4096 * (1 + next(4)), proto::kAllocPopulate};
      case 4: return proto::RegionFree{1 + next(64)};
      case 5: return proto::NamedOpen{"fuzz-missing", 0};
      case 6: return proto::NamedUnlink{"fuzz-missing"};
      case 7: return proto::RegionsRequest{};
      case 8: return proto::StatsRequest{};
      case 9: return proto::BackendsRequest{};
      default: return proto::RegionMigrate{1 + next(64), static_cast<uint32_t>(next(3))};
    }
  }

  std::vector<std::byte> encode(const proto::Message& message) {
    auto bytes = proto::encode(static_cast<uint32_t>(rng_()), message);
    if (!bytes) {
      ADD_FAILURE() << "encode: " << bytes.error().message;
      return {};
    }
    return std::move(*bytes);
  }

  // A valid message with one field or part of it broken.
  std::vector<std::byte> corrupted() {
    std::vector<std::byte> m = encode(next(4) == 0 ? proto::Message(proto::Hello{}) : valid_request());
    auto put16 = [&](size_t at, uint16_t v) { std::memcpy(m.data() + at, &v, 2); };
    auto put32 = [&](size_t at, uint32_t v) { std::memcpy(m.data() + at, &v, 4); };
    static constexpr std::array<uint16_t, 10> kTypes = {0, 2, 3, 4, 5, 11, 19, 36, 999, 0xffff};
    static constexpr std::array<uint16_t, 4> kVersions = {0, 2, 7, 0xffff};
    switch (next(7)) {
      case 0: put32(0, static_cast<uint32_t>(rng_())); break;
      case 1: put16(4, kVersions[next(kVersions.size())]); break;
      case 2: put16(6, kTypes[next(kTypes.size())]); break;
      case 3: {
        uint32_t len = 0;
        std::memcpy(&len, m.data() + 12, 4);
        put32(12, next(2) ? len + 1 + static_cast<uint32_t>(next(100)) : static_cast<uint32_t>(rng_()));
        break;
      }
      case 4: m.resize(next(m.size())); break;
      case 5: {
        auto extra = random_bytes(1 + next(64));
        m.insert(m.end(), extra.begin(), extra.end());
        break;
      }
      default:
        if (m.size() > proto::kHeaderSize) {
          for (uint64_t k = 1 + next(4); k > 0; --k) {
            m[proto::kHeaderSize + next(m.size() - proto::kHeaderSize)] = static_cast<std::byte>(rng_());
          }
        }
        break;
    }
    return m;
  }

  std::vector<std::byte> garbage() { return next(2) ? random_bytes(length()) : corrupted(); }

 private:
  std::mt19937_64 rng_;
  uint32_t emu_;
};

struct Slot {
  UniqueFd fd;
  bool greeted = false;
};

TEST(Garbage, RandomDatagramsNeitherCrashNorLeak) {
  RunningPool pool;
  ASSERT_TRUE(pool.start());
  auto clients_now = [&] {
    auto status = pool.admin->call_for<proto::StatusReply>(proto::StatusRequest{});
    return status ? status->clients : 0u;
  };
  // The start-up probe connection may still be open for a moment.
  ASSERT_TRUE(wait_until([&] { return clients_now() == 1; }, 2s));
  const int baseline_fds = open_fd_count(pool.daemon.pid());
  ASSERT_GT(baseline_fds, 0);

  const uint64_t seed = fuzz_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set CXLPOOL_FUZZ_SEED to replay)");
  Garbage gen(seed, pool.emu);
  UniqueFd memfd(::memfd_create("fuzz-attachment", MFD_CLOEXEC));
  ASSERT_TRUE(memfd);
  ASSERT_EQ(::ftruncate(memfd.get(), 4096), 0);

  std::vector<Slot> slots(kConnections);
  int connections = 0;
  auto reconnect = [&](Slot& slot) {
    ++connections;
    slot.fd = raw_connect(pool.daemon.socket());
    slot.greeted = false;
    return slot.fd.valid();
  };
  int delivered = 0;
  for (int i = 0; i < kDatagrams; ++i) {
    Slot& slot = slots[gen.next(kConnections)];
    const uint64_t scenario = gen.next(100);
    const bool fresh = (scenario >= 50 && scenario < 70) || !slot.fd;
    if (fresh && !reconnect(slot)) continue;
    std::vector<std::byte> bytes;
    std::vector<int> fds;
    if (scenario < 25) {
      bytes = gen.random_bytes(gen.length());
    } else if (scenario < 50) {
      bytes = gen.corrupted();
    } else if (scenario < 60) {
      // Hello, then garbage.
      if (send_encoded(slot.fd.get(), 1, proto::Hello{})) slot.greeted = true;
      bytes = gen.garbage();
    } else if (scenario < 70) {
      // A request before Hello.
      bytes = gen.encode(gen.valid_request());
    } else if (scenario < 85) {
      // Descriptors nobody asked for, up to past the per-message limit.
      fds.assign(1 + gen.next(proto::kMaxFdsPerMessage + 2), memfd.get());
      bytes = gen.next(2) ? gen.garbage()
                          : gen.encode(slot.greeted ? gen.valid_request() : proto::Message(proto::Hello{}));
    } else {
      // Well-formed traffic in between, including leased allocations that
      // must go away with their connection.
      bytes = gen.encode(slot.greeted ? gen.valid_request() : proto::Message(proto::Hello{}));
      slot.greeted = true;
    }
    if (send_datagram(slot.fd.get(), bytes, fds)) {
      ++delivered;
    } else {
      // Closed by the daemon (it drops a client after a malformed message)
      // or not reading: the next use of this slot reconnects.
      slot.fd.reset();
    }
  }
  EXPECT_GT(delivered, kDatagrams / 2) << "most datagrams should have reached the daemon";
  slots.clear();

  ASSERT_TRUE(pool.daemon.running()) << "cxlpoold died under garbage input";
  EXPECT_TRUE(wait_until([&] { return clients_now() == 1; }, 5s)) << clients_now() << " clients still connected";
  int fds_now = -1;
  EXPECT_TRUE(wait_until(
      [&] {
        fds_now = open_fd_count(pool.daemon.pid());
        return fds_now == baseline_fds;
      },
      2s))
      << "daemon has " << fds_now << " descriptors open, " << baseline_fds << " before";

  const auto counters = stats(*pool.admin);
  std::cout << "garbage: " << delivered << " of " << kDatagrams << " datagrams delivered over " << connections
            << " connections; the daemon counted " << counters.at("control.malformed_messages")
            << " malformed and " << counters.at("control.requests") << " requests\n";
  EXPECT_GT(counters.at("control.malformed_messages"), 0u);
  EXPECT_GT(counters.at("control.requests"), 0u);
  EXPECT_EQ(counters.at("pool.regions"), 0u);
  EXPECT_EQ(counters.at("pool.allocated_bytes"), 0u);
  EXPECT_TRUE(list_regions(*pool.admin).empty());
  for (const auto& tier : list_tiers(*pool.admin)) EXPECT_EQ(tier.used, 0u) << tier.name;

  // And it still serves an ordinary client.
  Client client(pool.daemon.socket(), "after-the-storm");
  cxlpool::Region region = client.alloc(pool.emu, 8192, CXLPOOL_ALLOC_POPULATE);
  std::memset(region.map(), 0x5a, 8192);
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 8192u);
  region.free();
  EXPECT_EQ(tier_used(*pool.admin, kEmuTier), 0u);
}

}  // namespace
}  // namespace cxlpool::integration
