// SPDX-License-Identifier: Apache-2.0
// A throw-away network for the network engine's tests: namespaces named
// after this process ("hosts"), a veth pair from the NIC host to a "peer"
// namespace that plays the outside world, cxlpool-devpool engines running
// in them, and sockets opened inside a namespace. Everything it made goes
// when it does (engines stopped, namespaces and link files removed), also
// when a test fails halfway.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <cstdint>

#include <string>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"

namespace cxlpool::integration {

// An IPv4 socket address.
sockaddr_in address(const char* ip, uint16_t port);
// Deterministic content, different for every (seed, position).
std::vector<uint8_t> pattern(size_t bytes, uint64_t seed);
// Send/receive timeouts, and a receive buffer big enough for bursts.
void set_timeout(int fd, int seconds);
bool bind_to(int fd, const char* ip, uint16_t port);

// Why these tests cannot run here (not root, no /dev/net/tun, no `ip`),
// or "" when they can.
std::string net_lab_unavailable();

class NetLab {
 public:
  explicit NetLab(std::string engine_path);
  ~NetLab();
  NetLab(const NetLab&) = delete;
  NetLab& operator=(const NetLab&) = delete;

  // A namespace "<role><pid>" with lo up; its full name.
  std::string add_host(const std::string& role);
  // veth from `nic_host` (interface returned, up, no address) to `peer_host`
  // (given `peer_cidr`, e.g. "10.77.0.1/24").
  std::string add_veth(const std::string& nic_host, const std::string& peer_host, const std::string& peer_cidr);
  // A Linux bridge "br0" (up) in namespace `lan_host`: the switch of a LAN.
  bool add_bridge(const std::string& lan_host);
  // veth from `nic_host` (interface returned, up, no address) to a port of
  // `lan_host`'s bridge; both ends send wire-sized frames.
  std::string plug(const std::string& nic_host, const std::string& lan_host);
  // A link file under /dev/shm, formatted.
  std::string add_link();
  // Starts `cxlpool-devpool args...` (plus --ready-file) and waits until it
  // is ready; false (with its stderr in *error) when it exits or is not
  // ready within 10 s.
  bool start_engine(std::vector<std::string> args, std::string* error);
  // The process id of the engine start_engine() last started.
  pid_t last_engine() const { return engines_.empty() ? -1 : engines_.back(); }
  // kill -9 of an engine this lab started, and waits for it.
  void kill_engine(pid_t pid);
  // Runs `ip args...`; false with the output in *error when it fails.
  bool ip(const std::vector<std::string>& args, std::string* error = nullptr);
  // A socket created inside namespace `host`.
  UniqueFd socket_in(const std::string& host, int domain, int type);

  const std::string& engine_path() const { return engine_; }

 private:
  std::string engine_;
  std::string tag_;
  std::vector<std::string> hosts_;
  std::vector<std::string> files_;
  std::vector<pid_t> engines_;
  int next_file_ = 0;
  int next_port_ = 100;  // veth names of plug(), apart from add_veth()'s
};

}  // namespace cxlpool::integration
