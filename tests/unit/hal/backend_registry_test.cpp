// SPDX-License-Identifier: Apache-2.0
// The registry's choices against a table of test backends: preference
// order, what moves the search on and what ends it, explicit choices,
// backends not compiled in, CXLPOOL_BACKENDS, and the buffered fallback.
// The block devices opened are the real posix driver's, on a real file.
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "cxlpool/hal/backend_registry.hpp"
#include "cxlpool/hal/driver/block_driver.hpp"
#include "posix_block_device.hpp"
#include "support/environment.hpp"
#include "support/temp_dir.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::hal {
namespace {

int g_refusing_opens = 0;

hal::BackendReport available() { return {"", "", BackendState::kAvailable, "test backend"}; }

Result<std::unique_ptr<BlockDevice>> refuse(const std::string&, const BlockOpenOptions&) {
  ++g_refusing_opens;
  return fail(ENOSYS, "the kernel refuses this engine");
}

// Behaves as a file system without O_DIRECT would.
Result<std::unique_ptr<BlockDevice>> posix_without_direct(const std::string& path, const BlockOpenOptions& o) {
  if (o.direct) return fail(EINVAL, "O_DIRECT: invalid argument");
  return drivers::open_posix_block_device(path, o);
}

}  // namespace
}  // namespace cxlpool::hal

CXLPOOL_REGISTER_BACKEND(refusing, cxlpool::hal::BlockEngineOps, "refusing", 5, &cxlpool::hal::available,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::hal::refuse, nullptr}))
CXLPOOL_REGISTER_BACKEND(nodirect, cxlpool::hal::BlockEngineOps, "nodirect", 10, &cxlpool::hal::available,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::hal::posix_without_direct, nullptr}))
CXLPOOL_REGISTER_BACKEND(plain, cxlpool::hal::BlockEngineOps, "plain", 20, &cxlpool::hal::available,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_posix_block_device, nullptr}))
CXLPOOL_REGISTER_BACKEND(namedonly, cxlpool::hal::BlockEngineOps, "namedonly", cxlpool::hal::kExplicitOnly,
                         &cxlpool::hal::available,
                         (cxlpool::hal::BlockEngineOps{&cxlpool::drivers::open_posix_block_device, nullptr}))
CXLPOOL_REGISTER_BACKEND(netprobe, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kNetPort>, "netprobe", 10,
                         &cxlpool::hal::available, {})

namespace cxlpool::hal {

// This test program's backend table, as gen_backend_table.py would write it.
std::span<const BackendTableEntry> linked_backends() {
  static const BackendTableEntry table[] = {
      {&backends::plain, BackendClass::kBlockEngine, "plain", nullptr},
      {&backends::refusing, BackendClass::kBlockEngine, "refusing", nullptr},
      {&backends::namedonly, BackendClass::kBlockEngine, "namedonly", nullptr},
      {&backends::nodirect, BackendClass::kBlockEngine, "nodirect", nullptr},
      {nullptr, BackendClass::kBlockEngine, "absent", "libabsent not found"},
      {&backends::netprobe, BackendClass::kNetPort, "netprobe", nullptr},
  };
  return table;
}

namespace {

class BackendRegistry : public ::testing::Test {
 protected:
  void SetUp() override {
    filter_.unset();
    g_refusing_opens = 0;
    test::write_file(path_, "");
    std::filesystem::resize_file(path_, 1 << 20);
  }
  BlockOpenOptions options(bool fallback = false) {
    BlockOpenOptions o;
    o.direct = true;
    o.read_only = true;
    o.buffered_fallback = fallback;
    return o;
  }
  test::ScopedEnv filter_{kBackendFilterVariable};
  test::TempDir dir_{"registry"};
  const std::string path_ = dir_.resolve("device").string();
};

TEST_F(BackendRegistry, ReportsEveryBackendInClassAndPreferenceOrder) {
  auto reports = probe_all_backends();
  ASSERT_EQ(reports.size(), 6u);
  const char* expected[] = {"refusing", "nodirect", "plain", "namedonly", "absent", "netprobe"};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(reports[i].name, expected[i]) << i;
  EXPECT_EQ(reports[0].cls, "BlockEngine");
  EXPECT_EQ(reports[0].state, BackendState::kAvailable);
  EXPECT_EQ(reports[4].state, BackendState::kNotCompiled);
  EXPECT_EQ(reports[4].detail, "libabsent not found");
  EXPECT_EQ(reports[5].cls, "NetPort");
  EXPECT_EQ(probe_backends(BackendClass::kNetPort).size(), 1u);
  EXPECT_TRUE(probe_backends(BackendClass::kGpuVmm).empty());
}

TEST_F(BackendRegistry, BestAvailableSkipsARefusingEngineAndSaysWhy) {
  BackendSkips skipped;
  // nodirect refuses O_DIRECT with EINVAL: about the file, so the search ends there.
  auto dev = open_block_device("", path_, options(), &skipped);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, EINVAL);
  EXPECT_NE(dev.error().message.find("BlockEngine nodirect"), std::string::npos) << dev.error().message;
  EXPECT_EQ(g_refusing_opens, 1);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].name, "absent");
  EXPECT_EQ(skipped[0].reason, "not compiled: libabsent not found");
  EXPECT_EQ(skipped[1].name, "refusing");
  EXPECT_NE(skipped[1].reason.find("refuses"), std::string::npos);
}

TEST_F(BackendRegistry, BufferedFallbackOpensWhereDirectIoIsRefused) {
  BackendSkips skipped;
  auto dev = open_block_device("auto", path_, options(true), &skipped);
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_STREQ((*dev)->backend_name(), "posix");
  bool noted = false;
  for (const auto& s : skipped) noted = noted || s.name == "direct I/O";
  EXPECT_TRUE(noted);
}

TEST_F(BackendRegistry, FilterNarrowsTheChoice) {
  filter_.set("^nodirect");
  BackendSkips skipped;
  auto dev = open_block_device("", path_, options(), &skipped);
  ASSERT_TRUE(dev) << dev.error().message;
  // refusing was tried and skipped, nodirect excluded, plain opened.
  ASSERT_GE(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].name, "nodirect");
  EXPECT_NE(skipped[0].reason.find("excluded by CXLPOOL_BACKENDS=^nodirect"), std::string::npos);

  filter_.set("plain");
  g_refusing_opens = 0;
  dev = open_block_device("", path_, options(), nullptr);
  ASSERT_TRUE(dev) << dev.error().message;
  EXPECT_EQ(g_refusing_opens, 0);
  // An inclusion list restricts only the classes it names.
  auto reports = probe_backends(BackendClass::kNetPort);
  EXPECT_EQ(reports[0].state, BackendState::kAvailable);
  auto blk = probe_backends(BackendClass::kBlockEngine);
  EXPECT_EQ(blk[0].state, BackendState::kNotPresent);
  EXPECT_NE(blk[0].detail.find("excluded"), std::string::npos);
}

TEST_F(BackendRegistry, FilterWithATypoIsAnError) {
  filter_.set("plain,uring_typo");
  auto ok = check_backend_filter();
  ASSERT_FALSE(ok);
  EXPECT_EQ(ok.error().code, EINVAL);
  EXPECT_NE(ok.error().message.find("uring_typo"), std::string::npos);
  EXPECT_FALSE(open_block_device("", path_, options(), nullptr));
  // Reports still list every backend, each with the filter's error.
  auto reports = probe_all_backends();
  ASSERT_EQ(reports.size(), 6u);
  EXPECT_NE(reports[0].detail.find("uring_typo"), std::string::npos);
  filter_.set("plain,,nodirect");
  EXPECT_FALSE(check_backend_filter());
}

TEST_F(BackendRegistry, ExplicitChoices) {
  auto dev = open_block_device("namedonly", path_, options(), nullptr);
  ASSERT_TRUE(dev) << dev.error().message;

  auto absent = open_block_device("absent", path_, options(), nullptr);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().code, ENOTSUP);
  EXPECT_NE(absent.error().message.find("not compiled in: libabsent not found"), std::string::npos)
      << absent.error().message;

  auto refused = open_block_device("refusing", path_, options(), nullptr);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ENOSYS);
  EXPECT_NE(refused.error().message.find("BlockEngine refusing:"), std::string::npos);

  auto unknown = open_block_device("nosuch", path_, options(), nullptr);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, EINVAL);
  EXPECT_NE(unknown.error().message.find("known: plain, refusing, namedonly, nodirect, absent"), std::string::npos)
      << unknown.error().message;

  // A backend of another class is not a block engine.
  EXPECT_EQ(open_block_device("netprobe", path_, options(), nullptr).error().code, EINVAL);

  filter_.set("^namedonly");
  auto excluded = open_block_device("namedonly", path_, options(), nullptr);
  ASSERT_FALSE(excluded);
  EXPECT_EQ(excluded.error().code, ENOTSUP);
  EXPECT_NE(excluded.error().message.find("excluded by CXLPOOL_BACKENDS"), std::string::npos);
}

TEST_F(BackendRegistry, ErrorsAboutTheFileEndTheSearch) {
  filter_.set("^nodirect");
  auto dev = open_block_device("", path_ + ".missing", options(), nullptr);
  ASSERT_FALSE(dev);
  EXPECT_EQ(dev.error().code, ENOENT);
  EXPECT_NE(dev.error().message.find("BlockEngine plain"), std::string::npos) << dev.error().message;
}

TEST_F(BackendRegistry, UsableNamesFollowPreferenceAndFilter) {
  auto names = usable_backend_names(BackendClass::kBlockEngine);
  ASSERT_EQ(names.size(), 4u);
  EXPECT_EQ(names[0], "refusing");
  EXPECT_EQ(names[3], "namedonly");
  filter_.set("^refusing");
  EXPECT_EQ(usable_backend_names(BackendClass::kBlockEngine).size(), 3u);
}

TEST_F(BackendRegistry, NoBackendOfAClassIsENODEV) {
  auto vmm = open_gpu_vmm("", 0, nullptr);
  ASSERT_FALSE(vmm);
  EXPECT_EQ(vmm.error().code, ENODEV);
}

// Character devices open only for callers that ask (cxlpool-io's fio
// jobs on /dev/null and /dev/zero); they have no size and no alignment.
TEST(OpenBlockFile, CharacterDevicesOnlyWhenAllowed) {
  BlockOpenOptions o;
  o.direct = false;
  o.read_only = true;
  auto refused = open_block_file("/dev/zero", o);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("/dev/zero: neither a regular file nor a block device"), std::string::npos)
      << refused.error().message;
  o.allow_char_device = true;
  auto opened = open_block_file("/dev/zero", o);
  ASSERT_TRUE(opened) << opened.error().message;
  EXPECT_TRUE(opened->geometry.is_char_device);
  EXPECT_FALSE(opened->geometry.is_block_device);
  EXPECT_EQ(opened->geometry.size, 0u);
  EXPECT_EQ(opened->geometry.offset_alignment, 1u);
}

}  // namespace
}  // namespace cxlpool::hal
