// SPDX-License-Identifier: Apache-2.0
// StagedCopier over a host-memory copy engine: pieces smaller and larger
// than a staging buffer, cut across buffers, arrive byte-exact both ways,
// and an engine error comes back.
#include "staged_copy.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <vector>

#include "support/host_copy_engine.hpp"

namespace cxlpool::client::arena {
namespace {

constexpr size_t kStage = 4096;

// Pieces of `sizes` bytes laid end to end in `device` and in `host`.
std::vector<DevicePiece> pieces_of(std::vector<uint8_t>& device, std::vector<uint8_t>& host,
                                   const std::vector<size_t>& sizes) {
  std::vector<DevicePiece> out;
  size_t at = 0;
  for (size_t n : sizes) {
    out.push_back(DevicePiece{reinterpret_cast<uint64_t>(device.data() + at), host.data() + at, n});
    at += n;
  }
  return out;
}

// A host-memory engine (its log reset) and a copier with kStage buffers.
class StagedCopierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_.reset();
    auto engine = test::open_host_copy_engine(0);
    ASSERT_TRUE(engine);
    engine_ = std::move(*engine);
    auto copier = StagedCopier::create(*engine_, kStage);
    ASSERT_TRUE(copier) << copier.error().message;
    copier_ = std::move(*copier);
  }
  test::HostCopyEngineLog& log_ = test::host_copy_engine_log();
  std::unique_ptr<hal::GpuCopyEngine> engine_;
  std::unique_ptr<StagedCopier> copier_;
};

TEST_F(StagedCopierTest, PiecesOfAnySizeArriveBothWays) {
  // Small, exactly one buffer, larger than two buffers, odd sizes.
  const std::vector<size_t> sizes{100, kStage, 3 * kStage + 17, 1, 999, 2 * kStage - 1};
  size_t total = 0;
  for (size_t n : sizes) total += n;
  std::vector<uint8_t> device(total), host(total), back(total);
  for (size_t i = 0; i < total; ++i) host[i] = static_cast<uint8_t>(i * 31 + 7);
  ASSERT_TRUE(copier_->to_device(pieces_of(device, host, sizes)));
  EXPECT_EQ(device, host);
  EXPECT_EQ(log_.bytes_to_device, total);
  ASSERT_TRUE(copier_->to_host(pieces_of(device, back, sizes)));
  EXPECT_EQ(back, host);
  EXPECT_EQ(log_.bytes_to_host, total);
  EXPECT_TRUE(copier_->to_host({}));
}

TEST_F(StagedCopierTest, EngineErrorsComeBack) {
  std::vector<uint8_t> device(10000), host(10000);
  log_.fail_copies_with = EIO;
  auto r = copier_->to_host(pieces_of(device, host, {10000}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EIO);
  r = copier_->to_device(pieces_of(device, host, {10000}));
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, EIO);
  log_.reset();
  log_.refuse_pinned = true;
  auto none = StagedCopier::create(*engine_, kStage);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, ENOMEM);
}

}  // namespace
}  // namespace cxlpool::client::arena
