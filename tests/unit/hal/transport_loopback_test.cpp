// SPDX-License-Identifier: Apache-2.0
// The Transport through the registry: two ofi transports in this process,
// on loopback (tcp;ofi_rxm) and through shm, move bytes both ways exactly,
// and every bad request gets its own error while the rest of its batch
// succeeds. Skips where libfabric has no such provider.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <vector>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/transport.hpp"

namespace cxlpool::hal {
namespace {

constexpr std::uint64_t kBytes = 8 << 20;

struct Memfd {
  std::byte* p = nullptr;
  explicit Memfd(std::uint64_t n) {
    const int fd = ::memfd_create("transport-test", MFD_CLOEXEC);
    if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(n)) == 0) {
      void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (m != MAP_FAILED) p = static_cast<std::byte*>(m);
    }
    if (fd >= 0) ::close(fd);
  }
  ~Memfd() {
    if (p != nullptr) ::munmap(p, kBytes);
  }
};

class TransportLoopback : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    TransportOptions o;
    o.rails = {"127.0.0.1"};
    o.shm = GetParam();
    o.chunk_bytes = 256 << 10;
    o.op_timeout = std::chrono::milliseconds(2000);
    auto a = open_transport("auto", o);
    if (!a) GTEST_SKIP() << a.error().message;
    auto b = open_transport("ofi", o);
    ASSERT_TRUE(b) << b.error().message;
    a_ = std::move(*a);
    b_ = std::move(*b);
    if (GetParam() && a_->rails().size() < 2) GTEST_SKIP() << "no shm provider";
    ASSERT_NE(mem_a_.p, nullptr);
    ASSERT_NE(mem_b_.p, nullptr);
    ASSERT_TRUE(a_->register_region(1, mem_a_.p, kBytes));
    ASSERT_TRUE(b_->register_region(2, mem_b_.p, kBytes));
    auto peer = a_->add_peer(b_->card());
    ASSERT_TRUE(peer) << peer.error().message;
    peer_ = *peer;
  }

  Memfd mem_a_{kBytes}, mem_b_{kBytes};
  std::unique_ptr<Transport> a_, b_;
  PeerId peer_ = 0;
};

TEST_P(TransportLoopback, MovesBytesExactlyBothWays) {
  for (std::uint64_t i = 0; i < kBytes; ++i) {
    mem_a_.p[i] = static_cast<std::byte>(i * 7 + 3);
    mem_b_.p[i] = static_cast<std::byte>(i * 13 + 1);
  }
  // Read 3 MiB + 5 of B's bytes to A's offset 1, write A's first MiB to B.
  std::vector<TransferRequest> batch{
      {TransferOp::kRead, peer_, 1, 1, 2, 100, (3 << 20) + 5},
      {TransferOp::kWrite, peer_, 1, 4 << 20, 2, 6 << 20, 1 << 20},
  };
  std::vector<std::byte> expect_read(mem_b_.p + 100, mem_b_.p + 100 + (3 << 20) + 5);
  auto results = a_->transfer(batch);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].error, 0) << results[0].message;
  EXPECT_EQ(results[1].error, 0) << results[1].message;
  EXPECT_EQ(std::memcmp(mem_a_.p + 1, expect_read.data(), expect_read.size()), 0);
  EXPECT_EQ(std::memcmp(mem_b_.p + (6 << 20), mem_a_.p + (4 << 20), 1 << 20), 0);
  std::uint64_t moved = 0;
  for (const auto& r : a_->rails()) moved += r.bytes_read + r.bytes_written;
  EXPECT_EQ(moved, (3u << 20) + 5 + (1u << 20));
  EXPECT_EQ(b_->stats().served_checks > 0, true) << "the owner checked what it served and received";
}

TEST_P(TransportLoopback, EachBadRequestFailsAlone) {
  std::vector<TransferRequest> batch{
      {TransferOp::kRead, peer_, 1, 0, 2, 0, 4096},             // fine
      {TransferOp::kRead, peer_, 9, 0, 2, 0, 4096},             // no local region 9
      {TransferOp::kRead, peer_, 1, kBytes - 10, 2, 0, 4096},   // past the local region
      {TransferOp::kWrite, peer_, 1, 0, 5, 0, 4096},            // the peer has no region 5
      {TransferOp::kWrite, peer_, 1, 0, 2, kBytes, 1},          // past the peer's region
      {TransferOp::kRead, peer_ + 7, 1, 0, 2, 0, 4096},         // no such peer
      {TransferOp::kRead, peer_, 1, 0, 2, 0, 0},                // empty
  };
  auto r = a_->transfer(batch);
  ASSERT_EQ(r.size(), batch.size());
  EXPECT_EQ(r[0].error, 0) << r[0].message;
  EXPECT_EQ(r[1].error, ENOENT);
  EXPECT_EQ(r[2].error, ERANGE);
  EXPECT_EQ(r[3].error, ENOENT);
  EXPECT_EQ(r[4].error, ERANGE);
  EXPECT_EQ(r[5].error, EINVAL);
  EXPECT_EQ(r[6].error, EINVAL);
}

TEST_P(TransportLoopback, OwnerRefusesARegionItNoLongerHas) {
  // The card still lists region 2, the owner has dropped it: the owner's
  // answer, not a stale byte, decides.
  ASSERT_TRUE(b_->unregister_region(2));
  TransferRequest r{TransferOp::kRead, peer_, 1, 0, 2, 0, 4096};
  auto results = a_->transfer({&r, 1});
  EXPECT_NE(results[0].error, 0) << "a read of a region the owner dropped succeeded";
  // The owner's refusal (ENOENT) when it arrives first; otherwise the read
  // of a key the owner no longer knows fails or stalls and the request
  // fails with its only rail (EHOSTUNREACH, ETIMEDOUT).
  const int e = results[0].error;
  EXPECT_TRUE(e == ENOENT || e == ETIMEDOUT || e == EHOSTUNREACH) << results[0].message;
  EXPECT_EQ(b_->unregister_region(2).error().code, ENOENT);
  EXPECT_EQ(a_->register_region(1, mem_a_.p, kBytes).error().code, EEXIST);
}

INSTANTIATE_TEST_SUITE_P(Providers, TransportLoopback, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "shm" : "tcp"; });

TEST(TransportRegistry, ProbeOnlyBackendIsRefusedByName) {
  TransportOptions o;
  auto verbs = open_transport("verbs", o);
  ASSERT_FALSE(verbs);
  EXPECT_EQ(verbs.error().code, ENOTSUP) << verbs.error().message;
  o.chunk_bytes = 1000;
  auto bad = open_transport("auto", o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
}

}  // namespace
}  // namespace cxlpool::hal
