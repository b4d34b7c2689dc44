// SPDX-License-Identifier: Apache-2.0
#include "daemon_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "support/child_process.hpp"
#include "support/process_env.hpp"
#include "support/wait_until.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::integration {
namespace {

// In the child before exec: the memlock limit, and CAP_IPC_LOCK out of
// the bounding set (a root exec's permitted set is the bounding set) and
// the inheritable one, as far as this process may drop it (a test checks
// the daemon's effective set and skips when it kept the capability).
// Async-signal-safe: raw system calls only. False, with errno, when the
// limit cannot be set.
bool limit_memlock(uint64_t bytes) {
  const rlimit limit{bytes, bytes};
  if (::setrlimit(RLIMIT_MEMLOCK, &limit) != 0) return false;
  (void)::prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) == 0) {
    data[CAP_TO_INDEX(CAP_IPC_LOCK)].inheritable &= ~CAP_TO_MASK(CAP_IPC_LOCK);
    (void)::syscall(SYS_capset, &header, data);
  }
  return true;
}

using Clock = std::chrono::steady_clock;

std::string required_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    ADD_FAILURE() << name << " is not set: run this test through `meson test`";
    return "";
  }
  return value;
}

bool socket_accepts(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return false;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

// Decimal digits without the allocator, for use between fork and exec.
void format_pid(char* out, pid_t pid) {
  char digits[16];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
}

}  // namespace

std::string daemon_binary() { return required_env("CXLPOOL_DAEMON"); }
std::string ctl_binary() { return required_env("CXLPOOL_CTL"); }

DaemonProcess::DaemonProcess(const std::string& config_toml) : state_("integ"), dir_(state_.path().string()) {
  ::chmod(dir_.c_str(), 0755);
  write_config(config_toml);
}

DaemonProcess::~DaemonProcess() {
  if (pid_ > 0 && running()) {
    const int result = stop();
    // Every daemon must shut down cleanly; under ASan a leak or memory error
    // at exit shows up here as a non-zero status.
    if (result != 0) ADD_FAILURE() << "cxlpoold (pid " << pid_ << ") exited with " << result << " at teardown";
  }
  if (exit_result_ > 128) remove_shm_endpoints();
  if (testing::Test::HasFailure()) {
    std::cerr << "----- cxlpoold log (" << log_path() << ") -----\n" << log() << "----- end of log -----\n";
  }
}

void DaemonProcess::write_config(const std::string& toml) const {
  const std::string tmp = config_path() + ".new";
  test::write_file(tmp, toml);
  if (::rename(tmp.c_str(), config_path().c_str()) != 0) {
    ADD_FAILURE() << "rename " << tmp << ": " << std::strerror(errno);
  }
}

std::string DaemonProcess::log() const { return test::read_file(log_path()); }

testing::AssertionResult DaemonProcess::start(const DaemonStartOptions& options) {
  if (pid_ > 0) return testing::AssertionFailure() << "already started";
  const std::string binary = daemon_binary();
  if (binary.empty()) return testing::AssertionFailure() << "no daemon binary";

  // Everything the child needs is built before fork: it only execs.
  std::vector<std::string> args{binary, "--config", config_path(), "--state-dir", dir_};
  ProcessEnv env;
  env.unset({"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID", "LISTEN_FDS", "LISTEN_PID", "CXLPOOL_SOCKET"});
  for (const auto& entry : options.env) env.set(entry);
  std::string watchdog_entry = "WATCHDOG_PID=" + std::string(16, '\0');
  char* watchdog_slot = nullptr;
  if (options.watchdog_pid_self) watchdog_slot = env.add_slot(watchdog_entry);
  auto argv = to_argv(args);
  auto envp = env.envp();
  const std::string log_file = log_path();
  int netns_fd = -1;
  if (!options.netns.empty()) {
    netns_fd = ::open(("/run/netns/" + options.netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) return testing::AssertionFailure() << "network namespace " << options.netns << ": " << std::strerror(errno);
  }

  const pid_t pid = ::fork();
  if (pid != 0 && netns_fd >= 0) ::close(netns_fd);
  if (pid < 0) return testing::AssertionFailure() << "fork: " << std::strerror(errno);
  if (pid == 0) {
    const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (log_fd < 0 || null_fd < 0) ::_exit(127);
    if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(127);
    if (options.memlock_limit_bytes && !limit_memlock(*options.memlock_limit_bytes)) {
      constexpr char kWhy[] = "test harness: setrlimit(RLIMIT_MEMLOCK) failed before exec\n";
      (void)!::write(log_fd, kWhy, sizeof kWhy - 1);
      ::_exit(127);
    }
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::close_range(3, ~0u, 0);
    if (watchdog_slot != nullptr) format_pid(watchdog_slot + std::strlen("WATCHDOG_PID="), ::getpid());
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  pid_ = pid;

  // Start-up probes every backend (libfabric providers, DPDK, DAMON, ...):
  // about half a second alone, over 5 s under ASan on a loaded 2-core
  // machine. Success returns at once; only a daemon that never listens
  // waits the whole limit.
  constexpr int kStartLimitSeconds = 30;
  const auto deadline = Clock::now() + std::chrono::seconds(kStartLimitSeconds);
  while (Clock::now() < deadline) {
    if (!running()) {
      return testing::AssertionFailure() << "cxlpoold exited during start-up with " << exit_result_ << "\n"
                                         << log();
    }
    if (socket_accepts(socket())) return testing::AssertionSuccess();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return testing::AssertionFailure() << "cxlpoold did not accept connections within "
                                     << kStartLimitSeconds << " s\n" << log();
}

bool DaemonProcess::reap(bool block) {
  if (pid_ <= 0 || exit_result_ >= 0) return true;
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid_, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid_) {
    exit_result_ = decode_wait_status(status);
    return true;
  }
  return false;
}

bool DaemonProcess::running() { return pid_ > 0 && !reap(false); }

// A daemon in a pod opens a libfabric shm endpoint, whose region the
// provider creates as /dev/shm/cxlpool-PID-N:... and unlinks when the
// endpoint closes. One killed by a signal (a crash test) never closes it:
// its test removes what that pid left, so that runs do not pile up regions.
void DaemonProcess::remove_shm_endpoints() const {
  const std::string prefix = "cxlpool-" + std::to_string(pid_) + "-";
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) std::filesystem::remove(entry.path(), ec);
  }
}

void DaemonProcess::send_signal(int sig) const {
  if (pid_ > 0 && exit_result_ < 0) ::kill(pid_, sig);
}

int DaemonProcess::wait_exit(std::chrono::milliseconds timeout) {
  if (!test::wait_until([this] { return !running(); }, timeout, std::chrono::milliseconds(5))) return -1;
  return exit_result_;
}

int DaemonProcess::stop(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return -1;
  if (!running()) return exit_result_;
  send_signal(SIGTERM);
  const int result = wait_exit(timeout);
  if (result >= 0) return result;
  ::kill(pid_, SIGKILL);
  reap(true);
  return -1;
}

testing::AssertionResult config_rejected(const DaemonProcess& dir, const std::string& toml, const std::string& where) {
  const std::string path = dir.dir() + "/bad.toml";
  test::write_file(path, toml);
  const auto r = run_program({daemon_binary(), "--check-config", "--config", path, "--state-dir", dir.dir()});
  if (r.exit_code == 0) return testing::AssertionFailure() << "accepted:\n" << toml;
  if (r.err.find(where) == std::string::npos) {
    return testing::AssertionFailure() << "no '" << where << "' in: " << r.err << "for:\n" << toml;
  }
  return testing::AssertionSuccess();
}

void expect_configs_rejected(const DaemonProcess& dir, std::initializer_list<RejectedConfig> cases) {
  for (const RejectedConfig& c : cases) EXPECT_TRUE(config_rejected(dir, c.toml, c.where));
}

}  // namespace cxlpool::integration
