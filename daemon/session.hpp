// SPDX-License-Identifier: Apache-2.0
// One connected client: its peer identity (SO_PEERCRED, SO_PEERGROUPS), the
// negotiated protocol version and the region handles it holds.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/proto/access_ring.hpp"
#include "cxlpool/tiering/client_report_source.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {

// A connection's access-report ring: the daemon's mapping, registered with
// the client-report source for as long as it exists.
struct SessionAccessRing {
  SessionAccessRing() = default;
  SessionAccessRing(const SessionAccessRing&) = delete;
  SessionAccessRing& operator=(const SessionAccessRing&) = delete;
  // Unregisters without a final drain: by now the session may be half torn
  // down (close_session drains it while the session is still whole).
  ~SessionAccessRing() {
    if (source != nullptr) source->remove_ring(session_id, false);
  }
  proto::AccessRingMemory memory;
  tiering::ClientReportSource* source = nullptr;
  uint64_t session_id = 0;
};

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
  // RegionAlias: a restored clone's recorded leased-region id → the region
  // this connection allocated in its place.
  std::unordered_map<uint64_t, uint64_t> region_aliases;
  int kv_doorbell_fd = -1;  // KvOpen: the connection's SQ eventfd in epoll (owned by the KV service)
  // Last member, so it is destroyed (and unregistered) first.
  std::unique_ptr<SessionAccessRing> access_ring;  // AccessRingOpen; one per connection
};

}  // namespace cxlpool::daemon
