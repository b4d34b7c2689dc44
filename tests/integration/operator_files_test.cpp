// SPDX-License-Identifier: Apache-2.0
// Files an operator names in the configuration, as the daemon (root) treats
// them: the KV store's ssd_path is never followed through a symbolic link,
// never takes over a file holding something else unless told to, lives in a
// directory that exists; --check-config and the start agree. Implausible
// tier sizes are refused before anything is created.
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/child_process.hpp"
#include "support/whole_file.hpp"
#include "daemon_process.hpp"
#include "test_config.hpp"

namespace cxlpool::integration {
namespace {

namespace fs = std::filesystem;

constexpr int kExitConfig = 3;
constexpr int kExitStart = 4;

std::string kv_table(const std::string& ssd_path, const std::string& extra = "") {
  return "[kvstore]\nslot_bytes = 65536\ndram_bytes = 1048576\ncxl_bytes = 0\nssd_path = \"" + ssd_path +
         "\"\nssd_bytes = 4194304\nssd_region_bytes = 262144\n" + extra;
}

ProgramResult check_config(const DaemonProcess& dir) {
  return run_program({daemon_binary(), "--check-config", "--config", dir.config_path(), "--state-dir", dir.dir()});
}

// Starts a daemon on `toml`, which must fail with `exit_code` (kExitConfig:
// refused by the checks before start-up, kExitStart: while opening what the
// file names); returns its log.
std::string failed_start(const std::string& toml, int exit_code) {
  DaemonProcess daemon(toml);
  if (daemon.start()) {
    ADD_FAILURE() << "started with:\n" << toml;
    return "";
  }
  EXPECT_EQ(daemon.exit_result(), exit_code) << daemon.log();
  return daemon.log();
}

TEST(OperatorFiles, ASymlinkedSsdPathIsRefusedAndItsTargetUntouched) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string target = daemon.dir() + "/precious";
  const std::string content = "root:x:0:0:root:/root:/bin/bash\n";
  std::ofstream(target) << content;
  const std::string link = daemon.dir() + "/kv.img";
  fs::create_symlink(target, link);
  daemon.write_config(TestConfig{.tables = kv_table(link)}.render());

  auto checked = check_config(daemon);
  EXPECT_EQ(checked.exit_code, kExitConfig) << checked.out;
  EXPECT_NE(checked.err.find("kvstore.ssd_path " + link + " is a symbolic link"), std::string::npos) << checked.err;

  const std::string log = failed_start(TestConfig{.tables = kv_table(link)}.render(), kExitConfig);
  EXPECT_NE(log.find(link + " is a symbolic link"), std::string::npos) << log;
  // Forcing a foreign file does not make a link acceptable.
  EXPECT_NE(failed_start(TestConfig{.tables = kv_table(link, "ssd_format_foreign = true\n")}.render(), kExitConfig)
                .find("symbolic link"),
            std::string::npos);
  EXPECT_EQ(test::read_file(target), content);
  EXPECT_EQ(fs::file_size(target), content.size());
}

TEST(OperatorFiles, AForeignSsdFileIsRefusedUnlessForced) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string path = daemon.dir() + "/disk.img";
  const std::string content = "an operator's disk image, not a KV log\n";
  std::ofstream(path) << content;
  daemon.write_config(TestConfig{.tables = kv_table(path)}.render());
  auto checked = check_config(daemon);
  EXPECT_EQ(checked.exit_code, 0) << "a regular file passes the path check: " << checked.err;

  const std::string log = failed_start(TestConfig{.tables = kv_table(path)}.render(), kExitStart);
  EXPECT_NE(log.find("holds data that is not a cxlpool KV log"), std::string::npos) << log;
  EXPECT_NE(log.find("ssd_format_foreign"), std::string::npos) << log;
  EXPECT_EQ(test::read_file(path), content) << "refused before anything was grown or written";

  {
    DaemonProcess forced(TestConfig{.tables = kv_table(path, "ssd_format_foreign = true\n")}.render());
    ASSERT_TRUE(forced.start());
    EXPECT_EQ(fs::file_size(path), 4u << 20);
    // A chunk makes the file a log for sure (the shutdown seals it).
    ASSERT_EQ(forced.stop(), 0) << forced.log();
  }
  // Once it holds the log (or only zeros), the file is the log's: no force needed.
  DaemonProcess again(TestConfig{.tables = kv_table(path)}.render());
  ASSERT_TRUE(again.start());
}

TEST(OperatorFiles, AMissingSsdDirectoryIsNamedByCheckConfigAndAtStart) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string dir = daemon.dir() + "/no-such-dir";
  daemon.write_config(TestConfig{.tables = kv_table(dir + "/kv.img")}.render());
  auto checked = check_config(daemon);
  EXPECT_EQ(checked.exit_code, kExitConfig);
  EXPECT_NE(checked.err.find("its directory " + dir + " does not exist"), std::string::npos) << checked.err;
  EXPECT_NE(failed_start(TestConfig{.tables = kv_table(dir + "/kv.img")}.render(), kExitConfig)
                .find(dir + " does not exist"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir));
}

TEST(OperatorFiles, ADirectoryAsSsdPathIsNotAFile) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string dir = daemon.dir() + "/a-directory";
  fs::create_directory(dir);
  daemon.write_config(TestConfig{.tables = kv_table(dir)}.render());
  auto checked = check_config(daemon);
  EXPECT_EQ(checked.exit_code, kExitConfig);
  EXPECT_NE(checked.err.find("neither a regular file nor a block device (mode 040"), std::string::npos)
      << checked.err;
  EXPECT_NE(failed_start(TestConfig{.tables = kv_table(dir)}.render(), kExitConfig)
                .find("neither a regular file nor a block device"),
            std::string::npos);
}

TEST(OperatorFiles, ANewSsdFileIsCreatedPrivateAndAllocated) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string path = daemon.dir() + "/kv.img";
  daemon.write_config(TestConfig{.tables = kv_table(path)}.render());
  auto checked = check_config(daemon);
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_FALSE(fs::exists(path)) << "--check-config creates nothing";
  ASSERT_TRUE(daemon.start());
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), 4u << 20);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, 4u << 20) << "blocks allocated, not a sparse file";
}

TEST(OperatorFiles, ImplausibleTierSizesAreRefused) {
  DaemonProcess daemon(TestConfig{}.render());
  const std::string too_big = daemon.dir() + "/huge.toml";
  // More than any machine here has, yet below the 1 PiB cap: the host check.
  std::ofstream(too_big) << "[[emulated_tier]]\nname = \"vast\"\ncapacity = \"1000T\"\n";
  auto vast = run_program({daemon_binary(), "--check-config", "--config", too_big, "--state-dir", daemon.dir()});
  EXPECT_EQ(vast.exit_code, kExitConfig);
  EXPECT_NE(vast.err.find("emulated_tier 'vast': capacity"), std::string::npos) << vast.err;
  EXPECT_NE(vast.err.find("exceeds this host's memory and swap"), std::string::npos) << vast.err;
  EXPECT_TRUE(config_rejected(daemon, "[[emulated_tier]]\nname = \"max\"\ncapacity = 9223372036854775807\n",
                              "bad.toml:3: emulated_tier[0].capacity: must be at most 1 PiB"));
}

}  // namespace
}  // namespace cxlpool::integration
