// SPDX-License-Identifier: Apache-2.0
// How the network engines find their links through the pod allocator (the
// daemon's devpool service) instead of link files: a backend registers its
// NIC, renews its lease with heartbeats that carry the NIC's load and link
// state, and serves every link slot the pod table gives its device; a
// frontend attaches and follows its attachment's table line from leg to
// leg. Both map the pod file whose descriptor comes with the daemon's reply.
//
// In the embedded pod every host reaches the one daemon through its control
// socket's path (an AF_UNIX path works across network namespaces on one
// machine); a pod of several machines will keep the same table in etcd.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/devpool/pod_region.hpp"
#include "cxlpool/hal/net_port.hpp"
#include "net_engines.hpp"

namespace cxlpool::devpool_tool {

// The pod file, mapped, and its table read with the pod's line-access policy.
class PodTable {
 public:
  static Result<PodTable> map(int fd, uint64_t bytes);

  devpool::Coherence coherence() const { return geometry_.coherence; }
  const devpool::PodGeometry& geometry() const { return geometry_; }
  Result<devpool::AttachmentLine> attachment(uint32_t index);
  // The link formatted in `slot`.
  Result<devpool::LinkView> link(uint32_t slot);

 private:
  Mapping mapping_;
  devpool::PodGeometry geometry_;
};

struct PodBackendOptions {
  std::string socket;  // the daemon's control socket
  std::string host;    // this host's name in the pod
  std::string nic;     // the interface (the device's name in the pod)
};

// The links the pod table gives this backend's NIC (both legs: those it
// carries and those it stands by for). Heartbeats go out every telemetry
// period from poll(); the table is scanned when the heartbeat's
// table_version changed, and every kScanInterval in any case.
class PodBackendLinks : public BackendLinkSource {
 public:
  static constexpr std::chrono::milliseconds kScanInterval{20};

  static Result<std::unique_ptr<PodBackendLinks>> register_nic(const PodBackendOptions& options, hal::NetPort& port);
  devpool::Coherence coherence() const { return table_->coherence(); }
  uint32_t device_id() const { return device_id_; }

  Result<bool> poll(const BackendCounters& counters, LinkChange& change) override;

 private:
  PodBackendLinks(const PodBackendOptions& options, hal::NetPort& port) : options_(options), port_(port) {}
  Result<void> register_device();
  Result<void> heartbeat(const BackendCounters& counters, std::chrono::steady_clock::time_point now);
  Result<bool> scan(LinkChange& change);

  PodBackendOptions options_;
  hal::NetPort& port_;
  std::unique_ptr<client::Connection> conn_;
  std::unique_ptr<PodTable> table_;
  uint32_t device_id_ = 0;
  std::chrono::milliseconds telemetry_{100};
  bool healthy_ = true;
  bool link_up_ = true;
  uint64_t table_version_ = 0;
  bool rescan_ = true;
  std::chrono::steady_clock::time_point next_beat_{}, next_scan_{}, last_beat_{};
  uint64_t last_bytes_ = 0, last_frames_ = 0;
  // Served links by key (attachment id, leg, slot), with the device id that
  // had it: a device that re-registers starts over.
  std::map<uint64_t, uint32_t> served_;
};

struct PodFrontendOptions {
  std::string socket;
  std::string host;
  std::string prefer;       // a device (NIC) name, or empty: the least loaded
  std::string prefer_host;  // its host, or empty
};

// The frontend's attachment: its two legs as its table line names them.
class PodFrontendLegs : public FrontendLinkSource {
 public:
  static Result<std::unique_ptr<PodFrontendLegs>> attach(const PodFrontendOptions& options);
  devpool::Coherence coherence() const { return table_->coherence(); }
  const proto::DevAttachReply& reply() const { return reply_; }

  Result<bool> poll(FrontendLegs& legs) override;

 private:
  std::unique_ptr<client::Connection> conn_;  // the attachment lives as long as it
  std::unique_ptr<PodTable> table_;
  proto::DevAttachReply reply_;
  uint32_t generation_ = 0;
  uint32_t device_[2] = {0, 0};
  bool first_ = true;
};

}  // namespace cxlpool::devpool_tool
