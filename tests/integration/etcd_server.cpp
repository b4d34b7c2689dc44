// SPDX-License-Identifier: Apache-2.0
#include "etcd_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include <httplib.h>

#include "support/environment.hpp"

namespace cxlpool::integration {
namespace {

// A port the kernel had free a moment ago on 127.0.0.1.
uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

}  // namespace

std::string etcd_binary() {
  const std::string configured = test::env_value("CXLPOOL_ETCD");
  if (!configured.empty()) return configured;
  for (const char* dir : {"/usr/bin", "/usr/local/bin", "/usr/sbin"}) {
    const std::string path = std::string(dir) + "/etcd";
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

EtcdServer::EtcdServer() : dir_("etcd"), client_port_(free_port()), peer_port_(free_port()) {}

EtcdServer::~EtcdServer() { kill(); }

std::string EtcdServer::start() {
  const std::string client = endpoint();
  const std::string peer = "http://" + ip_ + ":" + std::to_string(peer_port_);
  const std::string data = (dir_.path() / "data").string();
  const std::string log_path = (dir_.path() / "etcd.log").string();
  std::vector<std::string> args = {etcd_binary(),
                                   "--name=pod-test",
                                   "--data-dir=" + data,
                                   "--listen-client-urls=" + client,
                                   "--advertise-client-urls=" + client,
                                   "--listen-peer-urls=" + peer,
                                   "--initial-advertise-peer-urls=" + peer,
                                   "--initial-cluster=pod-test=" + peer,
                                   "--log-level=warn"};
  int netns_fd = -1;
  if (!netns_.empty()) {
    netns_fd = ::open(("/run/netns/" + netns_).c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) return "network namespace " + netns_ + " cannot be opened";
  }
  const pid_t pid = ::fork();
  if (pid != 0 && netns_fd >= 0) ::close(netns_fd);
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    if (netns_fd >= 0 && ::setns(netns_fd, CLONE_NEWNET) != 0) ::_exit(127);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log >= 0) {
      ::dup2(log, STDOUT_FILENO);
      ::dup2(log, STDERR_FILENO);
    }
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  pid_ = pid;
  // A socket is made in the namespace of the thread that makes it: the
  // probe runs on a thread that moved into etcd's namespace.
  auto answers = [&] {
    bool ok = false;
    std::thread t([&] {
      if (!netns_.empty()) {
        const int ns = ::open(("/run/netns/" + netns_).c_str(), O_RDONLY | O_CLOEXEC);
        const bool moved = ns >= 0 && ::setns(ns, CLONE_NEWNET) == 0;
        if (ns >= 0) ::close(ns);
        if (!moved) return;
      }
      httplib::Client probe(client);
      probe.set_connection_timeout(std::chrono::milliseconds(200));
      probe.set_read_timeout(std::chrono::milliseconds(500));
      auto reply = probe.Post("/v3/kv/range", R"({"key":"AA=="})", "application/json");
      ok = reply && reply->status == 200;
    });
    t.join();
    return ok;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    if (answers()) return {};
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "etcd exited at start:\n" + log();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill();
  return "etcd did not answer within 15 s:\n" + log();
}

void EtcdServer::kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string EtcdServer::log() const {
  std::string text = dir_.read("etcd.log");
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

}  // namespace cxlpool::integration
