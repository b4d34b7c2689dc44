// SPDX-License-Identifier: Apache-2.0
// systemd integration without systemd: the test plays the service manager's
// notification socket and checks what cxlpoold reports on it.
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool_build_config.h"
#include "daemon_process.hpp"
#include "pool_queries.hpp"

namespace cxlpool::integration {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Notification {
  std::string text;
  pid_t sender = -1;
};

class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_.reset(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof addr.sun_path - 1);
    const int on = 1;
    if (!fd_ || ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::setsockopt(fd_.get(), SOL_SOCKET, SO_PASSCRED, &on, sizeof on) != 0) {
      ADD_FAILURE() << "notify socket " << path_ << ": " << std::strerror(errno);
      fd_.reset();
    }
  }

  const std::string& path() const { return path_; }

  std::optional<Notification> receive(std::chrono::milliseconds timeout) {
    if (!fd_) return std::nullopt;
    pollfd pfd{fd_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    char buf[4096];
    iovec iov{buf, sizeof buf};
    union {
      cmsghdr align;
      char bytes[CMSG_SPACE(sizeof(ucred))];
    } control{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes;
    msg.msg_controllen = sizeof control.bytes;
    const ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_DONTWAIT);
    if (n < 0) return std::nullopt;
    Notification out{std::string(buf, static_cast<size_t>(n)), -1};
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
        ucred cred{};
        std::memcpy(&cred, CMSG_DATA(c), sizeof cred);
        out.sender = cred.pid;
      }
    }
    return out;
  }

  // The first notification containing `needle` within `timeout`.
  std::optional<Notification> wait_for(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto n = receive(left);
      if (!n) return std::nullopt;
      if (n->text.find(needle) != std::string::npos) return n;
    }
    return std::nullopt;
  }

  // How many notifications containing `needle` arrive within `window`.
  int count(const std::string& needle, std::chrono::milliseconds window) {
    const auto deadline = Clock::now() + window;
    int seen = 0;
    while (Clock::now() < deadline) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      auto n = receive(left);
      if (!n) break;
      if (n->text.find(needle) != std::string::npos) ++seen;
    }
    return seen;
  }

 private:
  std::string path_;
  UniqueFd fd_;
};

bool built_with_systemd() { return CXLPOOL_HAVE_SYSTEMD != 0; }

TEST(Notify, ReadyAfterStartAndStoppingOnSigterm) {
  if (!built_with_systemd()) GTEST_SKIP() << "built without libsystemd: sd_notify is compiled out";
  DaemonProcess daemon(TestConfig{}.render());
  NotifySocket notify(daemon.dir() + "/notify.sock");
  ASSERT_TRUE(daemon.start({.env = {"NOTIFY_SOCKET=" + notify.path()}}));
  const auto ready = notify.wait_for("READY=1", 5s);
  ASSERT_TRUE(ready.has_value()) << "no READY=1";
  EXPECT_EQ(ready->sender, daemon.pid());
  EXPECT_NE(ready->text.find("STATUS="), std::string::npos) << ready->text;

  daemon.send_signal(SIGTERM);
  const auto stopping = notify.wait_for("STOPPING=1", 5s);
  ASSERT_TRUE(stopping.has_value()) << "no STOPPING=1";
  EXPECT_EQ(stopping->sender, daemon.pid());
  EXPECT_EQ(daemon.wait_exit(5s), 0);
}

TEST(Notify, WatchdogPingsWhenEnabledForTheDaemonsPid) {
  if (!built_with_systemd()) GTEST_SKIP() << "built without libsystemd: sd_notify is compiled out";
  DaemonProcess daemon(TestConfig{}.render());
  NotifySocket notify(daemon.dir() + "/notify.sock");
  ASSERT_TRUE(daemon.start({.env = {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000"},
                            .watchdog_pid_self = true}));
  ASSERT_TRUE(notify.wait_for("READY=1", 5s).has_value());
  // Every WATCHDOG_USEC / watchdog_divisor (2) = 100 ms: about ten a second.
  const int pings = notify.count("WATCHDOG=1", 1000ms);
  EXPECT_GE(pings, 2);
  EXPECT_LE(pings, 20);
}

TEST(Notify, NoWatchdogPingsWhenTheWatchdogIsMeantForAnotherPid) {
  if (!built_with_systemd()) GTEST_SKIP() << "built without libsystemd: sd_notify is compiled out";
  DaemonProcess daemon(TestConfig{}.render());
  NotifySocket notify(daemon.dir() + "/notify.sock");
  ASSERT_TRUE(daemon.start({.env = {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000",
                                    "WATCHDOG_PID=" + std::to_string(::getpid())}}));
  ASSERT_TRUE(notify.wait_for("READY=1", 5s).has_value());
  EXPECT_EQ(notify.count("WATCHDOG=1", 500ms), 0);
}

}  // namespace
}  // namespace cxlpool::integration
