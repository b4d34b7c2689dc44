// SPDX-License-Identifier: Apache-2.0
// One client connection's KV data path as the daemon holds it: its mapping of
// the ring memfd, the two doorbells, its writable mapping of the put window,
// and the completions the client's CQ had no room for yet.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kvcache/namespace_access.hpp"
#include "cxlpool/kvcache/store.hpp"
#include "cxlpool/proto/kv_ring.hpp"
#include "cxlpool/proto/shm_ring.hpp"

namespace cxlpool::daemon {

// What one control session may do with the namespaces it opened.
struct KvSessionRights {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> groups;
  bool admin = false;
  kvcache::KvRightsTable table;
  [[nodiscard]] kvcache::KvAccessor accessor() const { return {uid, gid, groups, admin}; }
};

struct KvConnection {
  uint64_t id = 0;  // the session id, also the store's client id
  proto::KvRingGeometry geometry;
  proto::KvRingMemory memory;
  UniqueFd sq_efd;  // the client rings it; in the daemon's epoll
  UniqueFd cq_efd;  // we ring it
  // Shared with the store, which keeps it mapped while the SSD log writes
  // chunks from it (put_commit with kKvPutCommitToSsd), after a close too.
  std::shared_ptr<proto::ShmMapping> put_window;
  proto::KvDaemonRing ring;
  // The session's namespace rights (KvService::rights_), checked for every
  // request taken from the ring.
  const kvcache::KvRightsTable* rights = nullptr;
  // In order; published before anything newer so the client sees each
  // request's completion once and completions stay in the order produced.
  std::deque<kvcache::KvStoreCompletion> backlog;
  bool dirty = false;            // completions staged since the last flush
  bool reported_broken = false;  // the ring broke and that was logged
  uint64_t requests = 0;
  uint64_t completions = 0;
  // When each request in flight was taken off the ring, by request id, for
  // the KV request duration histogram; bounded by the ring's size.
  std::unordered_map<uint64_t, uint64_t> taken_ns;
};

}  // namespace cxlpool::daemon
