// SPDX-License-Identifier: Apache-2.0
// The daemon's log output as systemd would start it: JOURNAL_STREAM names
// the stream its stderr is, and the lines go to the journal with their
// fields. A stand-in journald (a datagram socket at
// /run/systemd/journal/socket, in a private mount namespace: root only)
// receives them. A JOURNAL_STREAM inherited by a daemon whose stderr goes
// elsewhere leaves plain text.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/cxlpool.hpp"
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

using Entry = std::map<std::string, std::string>;

// Journal native protocol entries as sd_journal_sendv writes them
// ("FIELD=value" lines; values here hold no newline).
Entry parse_entry(const std::string& datagram) {
  Entry out;
  size_t at = 0;
  while (at < datagram.size()) {
    size_t end = datagram.find('\n', at);
    if (end == std::string::npos) end = datagram.size();
    const std::string line = datagram.substr(at, end - at);
    const size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
    at = end + 1;
  }
  return out;
}

// The process moves into a mount namespace of its own with a tmpfs on /run:
// the daemons it starts see the stand-in socket; the host's /run is untouched.
UniqueFd stand_in_journald() {
  if (::unshare(CLONE_NEWNS) != 0) return {};
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return {};
  if (::mount("tmpfs", "/run", "tmpfs", 0, "size=4m") != 0) return {};
  ::mkdir("/run/systemd", 0755);
  ::mkdir("/run/systemd/journal", 0755);
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, "/run/systemd/journal/socket");
  if (!fd || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return {};
  int size = 4 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof size);
  return fd;
}

// Reads the stand-in journald's socket on a thread of its own: a datagram
// socket's queue is short (net.unix.max_dgram_qlen), and a daemon whose
// entries nobody reads blocks in sd_journal_sendv.
class JournalReader {
 public:
  explicit JournalReader(UniqueFd fd) : fd_(std::move(fd)), thread_([this] { run(); }) {}
  ~JournalReader() { stop(); }
  std::vector<Entry> stop() {
    if (thread_.joinable()) {
      stopping_ = true;
      thread_.join();
    }
    return entries_;
  }

 private:
  void run() {
    char datagram[65536];
    for (;;) {
      pollfd p{fd_.get(), POLLIN, 0};
      const int ready = ::poll(&p, 1, 50);
      if (ready > 0) {
        const ssize_t n = ::recv(fd_.get(), datagram, sizeof datagram, 0);
        if (n > 0) entries_.push_back(parse_entry(std::string(datagram, static_cast<size_t>(n))));
        continue;
      }
      if (stopping_) return;
    }
  }

  UniqueFd fd_;
  std::vector<Entry> entries_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

const Entry* find_message(const std::vector<Entry>& entries, const std::string& prefix) {
  for (const auto& e : entries) {
    auto it = e.find("MESSAGE");
    if (it != e.end() && it->second.rfind(prefix, 0) == 0) return &e;
  }
  return nullptr;
}

TEST(Logs, UnderSystemdEachLineGoesToTheJournalWithItsFields) {
  UniqueFd journal_fd = stand_in_journald();
  if (!journal_fd) GTEST_SKIP() << "needs a private mount namespace for a stand-in journald (root)";
  JournalReader journal(std::move(journal_fd));
  DaemonProcess daemon(TestConfig{}.render());
  const std::string stream = stream_of(daemon.log_path());
  ASSERT_FALSE(stream.empty());
  ASSERT_TRUE(daemon.start({.env = {"JOURNAL_STREAM=" + stream}}));
  {
    Client client(daemon.socket(), "journal-fields");
    cxlpool_tier_info emu{};
    ASSERT_EQ(cxlpool_tier_by_name(client.get(), kEmuTier, &emu), 0);
    cxlpool::Region region = client.alloc(emu.id, kMiB);
  }
  ASSERT_EQ(daemon.stop(), 0);
  const std::vector<Entry> entries = journal.stop();
  ASSERT_FALSE(entries.empty());
  EXPECT_EQ(daemon.log(), "") << "every line went to the journal";

  const Entry* start = find_message(entries, "daemon: cxlpoold ");
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->at("PRIORITY"), "5") << "NOTICE";
  EXPECT_EQ(start->at("CXLPOOL_COMPONENT"), "daemon");
  EXPECT_EQ(start->at("SYSLOG_IDENTIFIER"), "cxlpoold");
  const Entry* backend = find_message(entries, "daemon: backend ");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->at("PRIORITY"), "6");
  const Entry* connected = find_message(entries, "control: client ");
  ASSERT_NE(connected, nullptr);
  EXPECT_TRUE(connected->contains("CXLPOOL_CLIENT"));
  const Entry* created = find_message(entries, "pool: client ");
  ASSERT_NE(created, nullptr);
  EXPECT_TRUE(created->contains("CXLPOOL_REGION"));
  EXPECT_TRUE(created->contains("CXLPOOL_CLIENT"));
  EXPECT_EQ(created->at("PRIORITY"), "7");
  const Entry* stopped = find_message(entries, "daemon: stopped");
  ASSERT_NE(stopped, nullptr);
  EXPECT_EQ(stopped->at("PRIORITY"), "5");
  std::string messages;
  for (const auto& e : entries) messages += e.at("MESSAGE") + "\n";
  EXPECT_EQ(line_repeating_its_logger(messages), "");
}

TEST(Logs, AnInheritedJournalStreamLeavesPlainText) {
  DaemonProcess daemon(TestConfig{}.render());
  ASSERT_TRUE(daemon.start({.env = {"JOURNAL_STREAM=1:1"}}));
  ASSERT_EQ(daemon.stop(), 0);
  const std::string log = daemon.log();
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} notice daemon: stopped\n)")))
      << log;
  EXPECT_TRUE(std::regex_search(log, std::regex(R"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} info  daemon: backend )")))
      << log;
  EXPECT_EQ(log.find("<5>"), std::string::npos) << log;
  EXPECT_EQ(line_repeating_its_logger(log), "");
}

}  // namespace
}  // namespace cxlpool::integration
