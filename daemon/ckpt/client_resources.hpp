// SPDX-License-Identifier: Apache-2.0
// What of cxlpoold a process to checkpoint holds, for the capture to record
// instead of refusing: its connections to the control socket and the
// pool's regions (by the file behind each), named or leased.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "../region_pool.hpp"
#include "cxlpool/ckpt/capture.hpp"

namespace cxlpool::daemon {

// The connection holding a lease: its peer pid (0: none), and the id its
// client knows the lease by (the region's own, or the recorded id a
// restored clone's connection answers to for it: RegionAlias).
struct LeaseHolder {
  pid_t pid = 0;
  uint64_t id = 0;
};
using LeaseHolderFn = std::function<LeaseHolder(uint64_t session_id, uint64_t region_id)>;

// Every region of the pool by (dev, ino) of its file. System regions (a
// service's, or a shared model's) count as named when they have a name:
// a clone opens them by name like any client, or is refused. A lease
// carries its size, tier and the pid of the connection holding it, under
// the id that connection's client knows it by (`holder`).
std::vector<ckpt::CaptureOptions::RegionFile> pool_region_files(const RegionPool& pool, const LeaseHolderFn& holder);

// The inodes of the sockets of process `pid` (pinned by `pidfd`) that are
// connected to the control socket at `socket_path`: each is taken with
// pidfd_getfd and its peer's address compared. Sockets it cannot inspect
// are left out (the capture then refuses them as sockets).
std::vector<uint64_t> control_socket_inodes(pid_t pid, int pidfd, const std::string& socket_path);

}  // namespace cxlpool::daemon
