// SPDX-License-Identifier: Apache-2.0
// The daemon's log output as systemd would start it: JOURNAL_STREAM names
// the stream its stderr is. Without a journald on the host the lines fall
// back to journald's "<priority>" stream prefix; a JOURNAL_STREAM inherited
// by a daemon whose stderr goes elsewhere leaves plain text.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "daemon_process.hpp"
#include "log_lines.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

// "DEVICE:INODE" of the daemon's log file, created ahead so that the daemon's
// stderr (opened O_APPEND by DaemonProcess) is this very file.
std::string stream_of(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  struct stat st {};
  const bool ok = fd >= 0 && ::fstat(fd, &st) == 0;
  if (fd >= 0) ::close(fd);
  return ok ? std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) : "";
}

TEST(Logs, UnderJournaldEachLineCarriesItsPriorityAndComponentOnce) {
  if (std::filesystem::exists("/run/systemd/journal/socket")) {
    GTEST_SKIP() << "a journald runs on this host: the lines go to the journal, not to the test's file";
  }
  DaemonProcess daemon(TestConfig{}.render());
  const std::string stream = stream_of(daemon.log_path());
  ASSERT_FALSE(stream.empty());
  ASSERT_TRUE(daemon.start({.env = {"JOURNAL_STREAM=" + stream}}));
  ASSERT_EQ(daemon.stop(), 0);
  const std::string log = daemon.log();
  EXPECT_TRUE(std::regex_search(log, std::regex(R"((^|\n)<5>daemon: cxlpoold \S+ starting)"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\n<5>daemon: listening on )"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\n<6>daemon: backend )"))) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\n<5>daemon: stopped\n)"))) << log;
  EXPECT_FALSE(std::regex_search(log, std::regex(R"(\d\d:\d\d:\d\d\.\d{3})"))) << "journald adds the time";
  EXPECT_EQ(line_repeating_its_logger(log), "");
}

TEST(Logs, AnInheritedJournalStreamLeavesPlainText) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start({.env = {"JOURNAL_STREAM=1:1"}}));
  ASSERT_EQ(daemon.stop(), 0);
  const std::string log = daemon.log();
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} notice daemon: stopped\n)")))
      << log;
  EXPECT_EQ(log.find("<5>"), std::string::npos) << log;
}

}  // namespace
}  // namespace cxlpool::integration
