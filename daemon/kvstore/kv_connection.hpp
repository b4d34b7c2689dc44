// SPDX-License-Identifier: Apache-2.0
// One client connection's KV data path as the daemon holds it: its mapping of
// the ring memfd, the two doorbells, its writable mapping of the put window,
// and the completions the client's CQ had no room for yet.
#pragma once

#include <cstdint>
#include <deque>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "cxlpool/proto/kv_ring.hpp"
#include "cxlpool/proto/shm_ring.hpp"

namespace cxlpool::daemon {

struct KvConnection {
  uint64_t id = 0;  // the session id, also the store's client id
  proto::KvRingGeometry geometry;
  proto::KvRingMemory memory;
  UniqueFd sq_efd;  // the client rings it; in the daemon's epoll
  UniqueFd cq_efd;  // we ring it
  proto::ShmMapping put_window;
  proto::KvDaemonRing ring;
  // In order; published before anything newer so the client sees each
  // request's completion once and completions stay in the order produced.
  std::deque<kvcache::KvStoreCompletion> backlog;
  bool dirty = false;            // completions staged since the last flush
  bool reported_broken = false;  // the ring broke and that was logged
  uint64_t requests = 0;
  uint64_t completions = 0;
};

}  // namespace cxlpool::daemon
