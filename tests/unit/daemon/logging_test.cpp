// SPDX-License-Identifier: Apache-2.0
// The daemon's log sink: the output it picks from JOURNAL_STREAM, priorities
// (NOTICE included), the component once per line, and the journal's
// structured fields, with the journal replaced by a recorder.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "log_journal.hpp"
#include "logging.hpp"
#include "support/child_process.hpp"

namespace cxlpool::daemon {
namespace {

std::vector<std::vector<std::string>> g_entries;
int g_send_result = 0;

int record(const std::vector<std::string>& fields) {
  g_entries.push_back(fields);
  return g_send_result;
}

bool has_field(const std::vector<std::string>& entry, const std::string& field) {
  return std::find(entry.begin(), entry.end(), field) != entry.end();
}

bool has_field_named(const std::vector<std::string>& entry, const std::string& name) {
  return std::any_of(entry.begin(), entry.end(), [&](const std::string& f) { return f.rfind(name + "=", 0) == 0; });
}

class Journal : public ::testing::Test {
 protected:
  void SetUp() override {
    g_entries.clear();
    g_send_result = 0;
    ASSERT_EQ(::pipe2(pipe_, O_CLOEXEC | O_NONBLOCK), 0);
    init_logging_for_test(LogLevel::kDebug, LogOutput::kJournal, record, pipe_[1]);
  }
  void TearDown() override {
    init_logging_for_test(LogLevel::kInfo, LogOutput::kText, record, STDERR_FILENO);
    ::close(pipe_[0]);
    ::close(pipe_[1]);
  }
  std::string stream_text() {
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(pipe_[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  }
  int pipe_[2] = {-1, -1};
};

TEST_F(Journal, EntriesCarryComponentPriorityAndContextFields) {
  {
    const ScopedLogFields fields({.client = 3, .region = 7, .error = ENOENT});
    logger("kvstore")->warn("client {}: gone", 3);
  }
  logger("kvstore")->info("idle");
  ASSERT_EQ(g_entries.size(), 2u);
  const auto& first = g_entries[0];
  EXPECT_TRUE(has_field(first, "MESSAGE=kvstore: client 3: gone"));
  EXPECT_TRUE(has_field(first, "PRIORITY=4"));
  EXPECT_TRUE(has_field(first, "SYSLOG_IDENTIFIER=cxlpoold"));
  EXPECT_TRUE(has_field(first, "CXLPOOL_COMPONENT=kvstore"));
  EXPECT_TRUE(has_field(first, "CXLPOOL_CLIENT=3"));
  EXPECT_TRUE(has_field(first, "CXLPOOL_REGION=7"));
  EXPECT_TRUE(has_field(first, "ERRNO=2"));
  const auto& second = g_entries[1];
  EXPECT_TRUE(has_field(second, "PRIORITY=6"));
  EXPECT_FALSE(has_field_named(second, "CXLPOOL_CLIENT")) << "the scope ended";
  EXPECT_FALSE(has_field_named(second, "ERRNO"));
  EXPECT_EQ(stream_text(), "") << "nothing on stderr while the journal takes the lines";
}

TEST_F(Journal, NestedScopesAddFieldsAndRestore) {
  const ScopedLogFields outer({.client = 9});
  {
    const ScopedLogFields inner({.region = 4});
    logger("pool")->error("x");
  }
  logger("pool")->error("y");
  ASSERT_EQ(g_entries.size(), 2u);
  EXPECT_TRUE(has_field(g_entries[0], "CXLPOOL_CLIENT=9"));
  EXPECT_TRUE(has_field(g_entries[0], "CXLPOOL_REGION=4"));
  EXPECT_TRUE(has_field(g_entries[0], "PRIORITY=3"));
  EXPECT_TRUE(has_field(g_entries[1], "CXLPOOL_CLIENT=9"));
  EXPECT_FALSE(has_field_named(g_entries[1], "CXLPOOL_REGION"));
}

TEST_F(Journal, NoticeIsPriorityFiveFromTheDaemonAndFromLibraries) {
  notice(*logger("daemon"), "ready");
  cxlpool::log(LogLevel::kNotice, "weights", "model loaded");
  cxlpool::log(LogLevel::kInfo, "weights", "detail");
  ASSERT_EQ(g_entries.size(), 3u);
  EXPECT_TRUE(has_field(g_entries[0], "PRIORITY=5"));
  EXPECT_TRUE(has_field(g_entries[1], "PRIORITY=5"));
  EXPECT_TRUE(has_field(g_entries[1], "CXLPOOL_COMPONENT=weights"));
  EXPECT_TRUE(has_field(g_entries[2], "PRIORITY=6"));
  logger("daemon")->warn("still a warning");
  EXPECT_TRUE(has_field(g_entries.back(), "PRIORITY=4")) << "the notice mark does not stick";
}

TEST_F(Journal, TheConfiguredLevelFiltersByPriority) {
  set_log_level(LogLevel::kNotice);
  logger("daemon")->info("dropped");
  notice(*logger("daemon"), "kept");
  set_log_level(LogLevel::kWarning);
  notice(*logger("daemon"), "dropped too");
  logger("daemon")->warn("kept too");
  ASSERT_EQ(g_entries.size(), 2u);
  EXPECT_TRUE(has_field(g_entries[0], "MESSAGE=daemon: kept"));
  EXPECT_TRUE(has_field(g_entries[1], "MESSAGE=daemon: kept too"));
}

TEST_F(Journal, TheComponentIsNamedOnce) {
  logger("kvstore")->info("kvstore: started");
  ASSERT_EQ(g_entries.size(), 1u);
  EXPECT_TRUE(has_field(g_entries[0], "MESSAGE=kvstore: started"));
}

TEST_F(Journal, AFailedSendFallsBackToPrefixedLinesOnStderr) {
  g_send_result = -ENOENT;
  notice(*logger("daemon"), "no journald");
  EXPECT_EQ(stream_text(), "<5>daemon: no journald\n");
}

TEST_F(Journal, TextAndPrefixedOutputs) {
  init_logging_for_test(LogLevel::kDebug, LogOutput::kText, record, pipe_[1]);
  logger("kvstore")->info("kvstore: started {}", 1);
  notice(*logger("daemon"), "stopped");
  const std::string text = stream_text();
  static const std::regex kText(
      R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} info  kvstore: started 1
\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} notice daemon: stopped
)");
  EXPECT_TRUE(std::regex_match(text, kText)) << text;
  init_logging_for_test(LogLevel::kDebug, LogOutput::kPrefixedStream, record, pipe_[1]);
  logger("kvstore")->debug("kvstore: x");
  EXPECT_EQ(stream_text(), "<7>kvstore: x\n");
  EXPECT_TRUE(g_entries.empty());
}

TEST(LogOutputChoice, OnlyTheStreamJournaldGaveCounts) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  UniqueFd read_end(fds[0]);
  UniqueFd write_end(fds[1]);
  struct stat st {};
  ASSERT_EQ(::fstat(write_end.get(), &st), 0);
  const std::string same = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  const std::string other = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1);
  EXPECT_EQ(choose_log_output(same.c_str(), write_end.get(), true), LogOutput::kJournal);
  EXPECT_EQ(choose_log_output(same.c_str(), write_end.get(), false), LogOutput::kPrefixedStream);
  EXPECT_EQ(choose_log_output(other.c_str(), write_end.get(), true), LogOutput::kText)
      << "inherited by a process whose stderr goes elsewhere";
  EXPECT_EQ(choose_log_output(nullptr, write_end.get(), true), LogOutput::kText);
  EXPECT_EQ(choose_log_output("garbage", write_end.get(), true), LogOutput::kText);
}

// The real sd_journal_sendv against a stand-in journald: a datagram socket
// at /run/systemd/journal/socket in a private mount namespace (root only).
TEST(JournalSocket, EntriesReachJournaldWithTheirFields) {
  if (!have_journal()) GTEST_SKIP() << "built without libsystemd";
  integration::ForkedChild child([](int report_fd) {
    if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount("tmpfs", "/run", "tmpfs", 0, "size=1m") != 0) {
      (void)!::write(report_fd, "skip\n", 5);
      return 0;
    }
    ::mkdir("/run/systemd", 0755);
    ::mkdir("/run/systemd/journal", 0755);
    const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, "/run/systemd/journal/socket");
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return 2;
    const int sent = journal_send({"MESSAGE=kvstore: started", "PRIORITY=5", "CXLPOOL_COMPONENT=kvstore", "ERRNO=2"});
    if (sent != 0) return 3;
    char datagram[4096];
    const ssize_t n = ::recv(fd, datagram, sizeof datagram, MSG_DONTWAIT);
    if (n <= 0) return 4;
    (void)!::write(report_fd, datagram, static_cast<size_t>(n));
    return 0;
  });
  const std::string got = child.read_all(std::chrono::seconds(5));
  ASSERT_EQ(child.wait(std::chrono::seconds(5)), 0) << got;
  if (got == "skip\n") GTEST_SKIP() << "no private mount namespace (needs root)";
  EXPECT_NE(got.find("MESSAGE=kvstore: started\n"), std::string::npos) << got;
  EXPECT_NE(got.find("PRIORITY=5\n"), std::string::npos) << got;
  EXPECT_NE(got.find("CXLPOOL_COMPONENT=kvstore\n"), std::string::npos) << got;
  EXPECT_NE(got.find("ERRNO=2\n"), std::string::npos) << got;
}

}  // namespace
}  // namespace cxlpool::daemon
