// SPDX-License-Identifier: Apache-2.0
// One connected client: its peer identity (SO_PEERCRED, SO_PEERGROUPS), the
// negotiated protocol version and the region handles it holds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {

struct Session {
  uint64_t id = 0;
  UniqueFd fd;
  pid_t pid = 0;
  Requester who;
  bool greeted = false;
  uint16_t version = 0;
  std::string name;
  uint64_t connected_ns = 0;
  std::unordered_map<uint64_t, uint32_t> handles;  // region id → handles held
  uint32_t handle_count = 0;
};

}  // namespace cxlpool::daemon
