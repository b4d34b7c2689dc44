// SPDX-License-Identifier: Apache-2.0
// cxlpool-devpool-blk through the pod allocator: registers the SSD with the
// daemon (DevRegister, kind blk), maps the pod file the reply hands over,
// renews its lease with heartbeats that carry the load, and serves every
// link slot the pod table gives its device, primary and backup legs alike,
// picking up attachments as the table changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "cxlpool/devpool/blk_backend.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::devpool::blk {

struct PodServeConfig {
  std::string socket;  // the daemon's control socket; empty: the default
  std::string host;    // this backend's host (a pod member)
  std::string name;    // the device's name: the same name on two hosts is one device reached two ways
  std::string ssd;     // what to open for every served slot
  std::string engine;  // BlockEngine backend
  hal::BlockOpenOptions open;
  BlkBackendOptions backend;
  std::uint64_t nominal_iops = 0;
  std::uint64_t nominal_bandwidth = 0;  // bytes/s
};

// Serves until `stop`; returns the exit code (0, or 1 after printing why).
int serve_pod(const PodServeConfig& config, const std::atomic<bool>& stop);

}  // namespace cxlpool::devpool::blk
