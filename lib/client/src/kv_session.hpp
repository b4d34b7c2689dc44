// SPDX-License-Identifier: Apache-2.0
// One connection's KV data path (the object behind cxlpool_kv): the request
// and completion rings, the writable put window, and per namespace opened
// for reading its views of the arenas, mapped read-only (a chunk's location
// is an offset into the view of its request's namespace).
//
// Two kinds of requests share the rings. Those of cxlpool_kv_submit carry an
// id naming a slot that remembers the caller's user_data; the blocking
// helpers' ids have the top bit set and name a Waiter on the helper's stack.
// Whoever drains the completion ring routes each completion: a helper's goes
// into its Waiter (locations translated straight into the helper's output),
// an asynchronous one into the stash that only cxlpool_kv_reap empties. So a
// helper never steals an asynchronous completion, and several threads may
// wait at once.
//
// Waiting: spin (draining the ring, lock dropped between looks) for up to
// CXLPOOL_SPIN_US, then sleep. One sleeper at a time polls the CQ eventfd
// (and the control socket, to notice the daemon going away); the others wait
// on a condition variable that every drain which routed something signals.
//
// Nothing on the request/completion path allocates once the reusable
// buffers have grown to the workload's batch sizes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "cxlpool/client/connection.hpp"
#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/kv.h"
#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::client {

// One blocking request in flight, on its caller's stack.
struct KvWaiter {
  uint64_t id = 0;
  uint8_t op = 0;
  uint64_t namespace_id = 0;
  uint64_t param0 = 0;
  cxlpool_kv_location* locations = nullptr;  // NULL: the caller wants none
  uint32_t capacity = 0;                      // most locations a valid answer has
  bool done = false;
  int32_t status = 0;
  uint64_t result0 = 0;
  uint64_t result1 = 0;
  uint64_t result2 = 0;
  uint32_t n_locations = 0;
  KvWaiter* next = nullptr;
};

// One blocking request's description.
struct KvCall {
  uint8_t op = 0;
  uint16_t flags = 0;
  uint64_t namespace_id = 0;
  std::span<const cxlpool_kv_key> keys;
  uint64_t param0 = 0;
  uint64_t param1 = 0;
  // A put_commit's declared CRCs, one per key (flags carry
  // kKvPutCommitChecksums); param1 is then the key count.
  std::span<const uint32_t> checksums;
};

class KvSession {
 public:
  static Result<std::unique_ptr<KvSession>> open(std::shared_ptr<Connection> conn, const cxlpool_kv_options* opts);
  KvSession(const KvSession&) = delete;
  KvSession& operator=(const KvSession&) = delete;
  // Releases the leases still held, then the arena handles; unmaps.
  ~KvSession();

  const cxlpool_kv_info& info() const { return info_; }
  // Whether cxlpool_kv_put declares its chunks' checksums: until a daemon
  // that does not know kKvPutCommitChecksums refuses one.
  bool declares_checksums() const { return declares_checksums_.load(std::memory_order_relaxed); }
  void stop_declaring_checksums() { declares_checksums_.store(false, std::memory_order_relaxed); }
  // cxlpool_kv_put calls running on this handle, each counted for its
  // duration (PutScope).
  std::atomic<uint32_t>& puts_running() { return puts_running_; }
  Connection& connection() const { return *conn_; }
  int eventfd() const { return cq_efd_.get(); }

  // cxlpool_kv_submit / _reap / _arm / _in_flight.
  Result<size_t> submit(std::span<const cxlpool_kv_request> requests);
  Result<size_t> reap(std::span<cxlpool_kv_completion> out, int timeout_ms);
  Result<bool> arm();
  uint64_t in_flight();

  // Runs one request and waits for its completion; `waiter` (whose
  // locations/capacity the caller set) receives the result. The status of
  // the request itself is in waiter.status, not in the returned Result,
  // which fails only when the data path does (EPIPE, ENOTCONN, ENOMEM).
  Result<void> call(const KvCall& request, KvWaiter& waiter);

  // Queues the release of a lease and returns without waiting for the
  // daemon's answer: the lease is forgotten at once and its completion is
  // dropped by whichever drain takes it off the ring (an unknown lease is
  // not reported). False: the rings are full, nothing was queued (the caller
  // falls back to call()). Fails only when the data path does.
  Result<bool> release_nowait(uint64_t lease);

  // Releases every lease this handle still holds (gets whose lease was not
  // released). Called by the destructor; best effort.
  void release_all_leases();

  // KvNamespaceOpen, then maps the namespace's views (when the reply grants
  // reading). Errors: the daemon's (EACCES, EINVAL...), EPROTO for a reply
  // whose views do not match the arenas.
  Result<proto::KvNamespaceReply> open_namespace(const proto::KvNamespaceOpen& request);

 private:
  struct Slot {  // an asynchronous request in flight
    uint64_t id = 0;  // 0: free
    uint64_t user_data = 0;
    uint64_t param0 = 0;
    uint32_t n_keys = 0;
    uint8_t op = 0;
    uint64_t namespace_id = 0;
  };
  struct Stashed {  // an asynchronous completion not yet reaped by the caller
    proto::KvCompletion completion;
    uint64_t user_data = 0;
    uint64_t namespace_id = 0;
    uint32_t first_location = 0;
  };
  struct Views {  // one namespace's views of the arenas, read-only
    Mapping mapping[2];  // index = tier; unmapped: no such arena
  };

  explicit KvSession(std::shared_ptr<Connection> conn) : conn_(std::move(conn)) {}
  Result<void> setup(const cxlpool_kv_options* opts);

  // Usable state, or why not.
  Result<void> usable_locked() const;
  // Moves every completion waiting in the ring to its waiter or the stash.
  void drain_locked();
  // Checks a location the daemon sent for `op` of namespace ns_id; fills
  // `out` with a pointer into this process's mappings. False: it points
  // outside them (or into a namespace this handle has no views of).
  bool translate(uint8_t op, uint64_t ns_id, const proto::KvLocation& in, cxlpool_kv_location& out) const;
  void note_lease_result(uint8_t op, int32_t status, uint64_t param0, uint64_t result0);
  void forget_lease_locked(uint64_t lease);
  // Routes the completion of a release_nowait(); false: it names none.
  bool route_detached_locked(const proto::KvCompletion& c, size_t n_locations);
  // Spins, then sleeps until done() holds (checked under the lock after
  // every drain), the deadline passes (monotonic ns; 0: none) or the path
  // breaks. Returns whether done() holds.
  template <typename Done>
  Result<bool> wait_locked(std::unique_lock<std::mutex>& lock, Done&& done, uint64_t deadline_ns);
  // One sleep: as the poller (eventfd + socket) or on the condition variable.
  void sleep_locked(std::unique_lock<std::mutex>& lock, uint64_t deadline_ns);
  // checksums: a put_commit's declared CRCs (kKvPutCommitChecksums), sent
  // as records after the keys; empty otherwise.
  Result<void> submit_one_locked(const proto::KvRequest& request, std::span<const cxlpool_kv_key> keys,
                                 std::span<const uint32_t> checksums = {});
  void compact_stash_locked();
  void break_locked() { broken_ = true; }

  std::shared_ptr<Connection> conn_;
  int socket_fd_ = -1;
  cxlpool_kv_info info_{};
  proto::KvRingMemory ring_memory_;
  UniqueFd sq_efd_;
  UniqueFd cq_efd_;
  Mapping put_window_;
  uint64_t arena_bytes_[2] = {0, 0};  // each arena's size, as KvOpen announced it; 0: none
  std::vector<Views> views_;          // index = namespace id; guarded by mutex_
  uint64_t spin_ns_ = 0;
  std::atomic<bool> declares_checksums_{true};
  std::atomic<uint32_t> puts_running_{0};

  std::mutex mutex_;
  std::condition_variable cv_;
  proto::KvClientRing ring_;
  bool broken_ = false;       // the daemon broke the ring protocol
  bool dead_ = false;         // the control connection is gone
  bool poller_ = false;       // a thread sleeps on the eventfd
  bool external_armed_ = false;  // cxlpool_kv_arm() was called and not yet followed by a reap
  uint32_t cv_sleepers_ = 0;
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
  uint32_t generation_ = 0;
  uint64_t next_helper_id_ = 1;
  KvWaiter* waiters_ = nullptr;
  proto::KvCompletionBatch scratch_;
  std::vector<proto::KvKey> records_;  // a request's keys and declared checksums, as sent
  std::vector<Stashed> stash_;
  size_t stash_head_ = 0;
  std::vector<proto::KvLocation> stash_locations_;
  std::vector<cxlpool_kv_location> reaped_locations_;  // what the last reap returned points here
  uint64_t async_in_flight_ = 0;  // submitted and not yet returned by reap
  std::vector<uint64_t> leases_;  // granted and not released
  std::vector<uint64_t> detached_;  // ids of release_nowait() requests in flight
};

}  // namespace cxlpool::client
