// SPDX-License-Identifier: Apache-2.0
// A real etcd server for the pod tests: Debian's etcd-server binary on two
// free loopback ports, its data in a temporary directory, stopped and
// started again on the same ports and data (a pod's etcd that goes away and
// comes back). Only this object's own child is ever signalled.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "support/temp_dir.hpp"

namespace cxlpool::integration {

// The etcd binary ($CXLPOOL_ETCD, else etcd on PATH); empty when there is none.
std::string etcd_binary();

class EtcdServer {
 public:
  EtcdServer();
  ~EtcdServer();
  EtcdServer(const EtcdServer&) = delete;
  EtcdServer& operator=(const EtcdServer&) = delete;

  // Runs it in network namespace `netns` (/run/netns/NAME), listening on
  // `ip` there, instead of on 127.0.0.1 here; before start().
  void place(const std::string& netns, const std::string& ip) {
    netns_ = netns;
    ip_ = ip;
  }

  // Starts it and waits up to 15 s until its gateway answers. The error
  // (with the end of its log) when it does not.
  std::string start();
  // SIGKILL (etcd keeps its data: leases survive, as after a crash).
  void kill();
  bool running() const { return pid_ > 0; }

  std::string endpoint() const { return "http://" + ip_ + ":" + std::to_string(client_port_); }
  std::string log() const;

 private:
  test::TempDir dir_;
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  pid_t pid_ = -1;
  std::string netns_;
  std::string ip_ = "127.0.0.1";
};

}  // namespace cxlpool::integration
