// SPDX-License-Identifier: Apache-2.0
#include "net_lab.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "support/child_process.hpp"
#include "support/wait_until.hpp"

namespace cxlpool::integration {
namespace {

constexpr const char* kIp = "/usr/sbin/ip";

}  // namespace

sockaddr_in address(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

// Deterministic content, different for every (seed, position).
std::vector<uint8_t> pattern(size_t bytes, uint64_t seed) {
  std::vector<uint8_t> out(bytes);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<uint8_t>(x);
  }
  return out;
}

void set_timeout(int fd, int seconds) {
  // Bursts of datagrams must not overflow the default receive buffer.
  const int bytes = 8 << 20;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes));
  timeval tv{seconds, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool bind_to(int fd, const char* ip, uint16_t port) {
  const sockaddr_in a = address(ip, port);
  return ::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof(a)) == 0;
}

std::string net_lab_unavailable() {
  if (::geteuid() != 0) return "needs root (network namespaces, TAP and veth devices)";
  if (::access("/dev/net/tun", R_OK | W_OK) != 0) return "no /dev/net/tun";
  if (::access(kIp, X_OK) != 0) return std::string("no ") + kIp + " (iproute2)";
  return "";
}

NetLab::NetLab(std::string engine_path) : engine_(std::move(engine_path)), tag_(std::to_string(::getpid())) {}

NetLab::~NetLab() {
  for (pid_t pid : engines_) ::kill(pid, SIGTERM);
  for (pid_t pid : engines_) {
    // SIGKILL an engine that has not stopped within 5 s.
    int status = 0;
    const bool stopped =
        test::wait_until([&] { return ::waitpid(pid, &status, WNOHANG) == pid; }, std::chrono::milliseconds(5000));
    if (!stopped) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
    }
  }
  // What the engines said (their counters as they stopped), for the test log.
  for (const std::string& file : files_) {
    if (!file.ends_with(".log")) continue;
    if (FILE* f = std::fopen(file.c_str(), "r")) {
      char line[512];
      while (std::fgets(line, sizeof(line), f) != nullptr) std::fputs(line, stdout);
      std::fclose(f);
    }
  }
  for (const std::string& host : hosts_) ip({"netns", "del", host});
  for (const std::string& file : files_) std::filesystem::remove(file);
}

bool NetLab::ip(const std::vector<std::string>& args, std::string* error) {
  std::vector<std::string> argv{kIp};
  argv.insert(argv.end(), args.begin(), args.end());
  ProgramResult r = run_program(argv);
  if (r.exit_code == 0) return true;
  if (error != nullptr) *error = "ip: " + r.err + r.out;
  return false;
}

std::string NetLab::add_host(const std::string& role) {
  const std::string name = "cx" + role + tag_;
  if (!ip({"netns", "add", name})) return "";
  hosts_.push_back(name);
  ip({"-n", name, "link", "set", "lo", "up"});
  return name;
}

std::string NetLab::add_veth(const std::string& nic_host, const std::string& peer_host, const std::string& peer_cidr) {
  const std::string nic = "vn" + tag_ + "_" + std::to_string(hosts_.size());
  const std::string peer = "vp" + tag_ + "_" + std::to_string(hosts_.size());
  if (!ip({"link", "add", nic, "netns", nic_host, "type", "veth", "peer", "name", peer, "netns", peer_host}) ||
      !ip({"-n", nic_host, "link", "set", nic, "up"}) ||
      !ip({"-n", peer_host, "addr", "add", peer_cidr, "dev", peer}) ||
      // A wire delivers frames of at most the MTU; a veth would pass the
      // peer's TCP segmentation-offload super-frames whole.
      !ip({"-n", peer_host, "link", "set", peer, "gso_max_segs", "1", "up"})) {
    return "";
  }
  return nic;
}

bool NetLab::add_bridge(const std::string& lan_host) {
  return ip({"-n", lan_host, "link", "add", "br0", "type", "bridge"}) && ip({"-n", lan_host, "link", "set", "br0", "up"});
}

std::string NetLab::plug(const std::string& nic_host, const std::string& lan_host) {
  const std::string nic = "vn" + tag_ + "_" + std::to_string(next_port_);
  const std::string port = "vl" + tag_ + "_" + std::to_string(next_port_++);
  if (!ip({"link", "add", nic, "netns", nic_host, "type", "veth", "peer", "name", port, "netns", lan_host}) ||
      !ip({"-n", lan_host, "link", "set", port, "master", "br0", "gso_max_segs", "1", "up"}) ||
      !ip({"-n", nic_host, "link", "set", nic, "gso_max_segs", "1", "up"})) {
    return "";
  }
  return nic;
}

void NetLab::kill_engine(pid_t pid) {
  if (std::find(engines_.begin(), engines_.end(), pid) == engines_.end()) return;
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::erase(engines_, pid);
}

std::string NetLab::add_link() {
  const std::string path = "/dev/shm/cxlpool-net-" + tag_ + "-" + std::to_string(next_file_++) + ".link";
  files_.push_back(path);
  ProgramResult r = run_program({engine_, "format", "--link-file", path});
  return r.exit_code == 0 ? path : "";
}

bool NetLab::start_engine(std::vector<std::string> args, std::string* error) {
  const std::string ready = "/dev/shm/cxlpool-net-" + tag_ + "-" + std::to_string(next_file_++) + ".ready";
  const std::string log = ready + ".log";
  files_.push_back(ready);
  files_.push_back(log);
  args.insert(args.begin(), engine_);
  args.push_back("--ready-file");
  args.push_back(ready);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (pid < 0) {
    *error = "fork failed";
    return false;
  }
  engines_.push_back(pid);
  bool exited = false;
  const bool ready_now = test::wait_until(
      [&] {
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          return true;
        }
        return std::filesystem::exists(ready);
      },
      std::chrono::milliseconds(10000));
  if (ready_now && !exited) return true;
  if (exited) std::erase(engines_, pid);
  std::string text;
  if (FILE* f = std::fopen(log.c_str(), "r")) {
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof(buf), f);
    text.assign(buf, n);
    std::fclose(f);
  }
  *error = (exited ? "engine exited: " : "engine not ready in 10 s: ") + text;
  return false;
}

UniqueFd NetLab::socket_in(const std::string& host, int domain, int type) {
  // setns moves only the calling thread: a thread of its own keeps this one
  // where it is; the socket stays in the namespace it was made in.
  UniqueFd out;
  std::thread t([&] {
    const std::string path = "/run/netns/" + host;
    UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ns || ::setns(ns.get(), CLONE_NEWNET) != 0) return;
    out.reset(::socket(domain, type | SOCK_CLOEXEC, 0));
  });
  t.join();
  return out;
}

}  // namespace cxlpool::integration
