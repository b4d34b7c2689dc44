// SPDX-License-Identifier: Apache-2.0
// What --check-config and the start check against the host: emulated tiers
// the machine cannot back, and an ssd_path that is a link, not a file, or in
// a directory that does not exist.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config.hpp"
#include "config_host_checks.hpp"
#include "cxlpool/common/units.hpp"
#include "support/temp_dir.hpp"

namespace cxlpool::daemon {
namespace {

class SsdPathCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    kv.ssd_path = (dir / "kv.img").string();
    kv.ssd_bytes = 4 * kMiB;
  }
  // /var/tmp: a disk file system, as an SSD tier's directory would be.
  test::TempDir scratch{"hostcheck", "/var/tmp"};
  const std::filesystem::path dir = scratch.path();
  KvStoreSection kv;
};

TEST_F(SsdPathCheck, ANewFileInAnExistingDirectoryPasses) {
  EXPECT_TRUE(check_ssd_path(kv));
  std::ofstream(kv.ssd_path) << "x";
  EXPECT_TRUE(check_ssd_path(kv)) << "an existing regular file";
  EXPECT_TRUE(check_ssd_path(KvStoreSection{})) << "no SSD tier";
}

TEST_F(SsdPathCheck, AMissingDirectoryIsAnError) {
  kv.ssd_path = (dir / "absent" / "kv.img").string();
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ENOENT);
  EXPECT_NE(ok.error().message.find((dir / "absent").string() + " does not exist"), std::string::npos)
      << ok.error().message;
}

TEST_F(SsdPathCheck, ASymlinkIsAnErrorEvenToARegularFile) {
  std::ofstream(dir / "target") << "x";
  std::filesystem::create_symlink(dir / "target", kv.ssd_path);
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, ELOOP);
  EXPECT_NE(ok.error().message.find("symbolic link"), std::string::npos) << ok.error().message;
}

TEST_F(SsdPathCheck, ADirectoryOrFifoIsNotALog) {
  kv.ssd_path = dir.string();
  auto directory = check_ssd_path(kv);
  ASSERT_FALSE(directory);
  EXPECT_EQ(directory.error().code, EINVAL);
  EXPECT_NE(directory.error().message.find("mode 040"), std::string::npos) << "octal: " << directory.error().message;
  kv.ssd_path = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(kv.ssd_path.c_str(), 0600), 0);
  auto fifo = check_ssd_path(kv);
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().code, EINVAL);
}

TEST_F(SsdPathCheck, ANewFileNeedsItsSize) {
  kv.ssd_bytes = 0;
  auto ok = check_ssd_path(kv);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, EINVAL);
  EXPECT_NE(ok.error().message.find("kvstore.ssd_bytes is not set"), std::string::npos);
}

TEST(EmulatedCapacityCheck, ATierLargerThanMemoryAndSwapIsRefused) {
  Config config = embedded_default_config();
  config.emulated_tiers[0].capacity = 8 * kGiB;
  EXPECT_TRUE(check_emulated_capacity(config, 8 * kGiB));
  auto ok = check_emulated_capacity(config, 8 * kGiB - 1);
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, EINVAL);
  EXPECT_NE(ok.error().message.find("emulated_tier 'emu-slow'"), std::string::npos) << ok.error().message;
  EXPECT_NE(ok.error().message.find("memory and swap"), std::string::npos) << ok.error().message;
  EXPECT_TRUE(check_emulated_capacity(config, 0)) << "unknown host size: nothing to compare";
  EXPECT_GT(host_memory_and_swap_bytes(), 0u);
  EXPECT_TRUE(check_config_on_host(embedded_default_config()));
}

}  // namespace
}  // namespace cxlpool::daemon
