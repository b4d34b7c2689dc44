// SPDX-License-Identifier: Apache-2.0
// Offload and restore of a row through the KV store (kv.h), as tickets that
// progress when polled. A store chunk is chunk_tokens tokens of every
// layer's K and V, packed in the order layer, K/V, token, head, dim. Full
// chunks go through the connection's put window (put_begin, copy, commit);
// the partial tail goes to a private pool region kept by the arena, found
// again by the hash of the namespace and every token. Restore leases the
// longest cached prefix (get), copies it into the row, releases the lease,
// and adds the tail when every full chunk came back.
//
// Split of the work: the ring traffic (submit, reap) and the bookkeeping run
// on the caller's thread inside begin/poll; the copies between the row and
// the put window, the lease or a tail region run on the CopyWorker thread,
// so that the caller's steps of other rows overlap them. A ticket pins its
// row (no reclaim, trim or reuse of its pages) until it is done.
//
// The arena reaps the kv handle's completions while tickets are in flight:
// the caller must not use cxlpool_kv_submit/reap on that handle meanwhile
// (the blocking helpers are fine). Host-memory backends only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "copy_worker.hpp"
#include "cxlpool/common/result.hpp"
#include "cxlpool/kv.h"

namespace cxlpool::client::arena {

class KvArena;

class Transfers {
 public:
  explicit Transfers(KvArena& arena);
  ~Transfers();
  Transfers(const Transfers&) = delete;
  Transfers& operator=(const Transfers&) = delete;

  Result<uint64_t> offload_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                 std::span<const uint32_t> tokens);
  Result<uint64_t> restore_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                 std::span<const uint32_t> tokens);
  // The ticket's token count once done (offload: tokens stored; restore:
  // leading tokens that hold their KV again); EINPROGRESS while running.
  // timeout_ms: 0 polls once, -1 waits.
  Result<uint64_t> poll(uint64_t ticket, int timeout_ms);

  size_t tails_kept() const { return tails_.size(); }
  // Bytes the copy thread moved and the time it spent on them.
  uint64_t bytes_copied() const { return copier_.bytes_copied(); }
  uint64_t copy_ns() const { return copier_.copy_ns(); }

 private:
  enum class Kind { kOffload, kRestore };
  // A private pool region holding a partial tail; freed (on the caller's
  // thread) when the last owner lets go: the tail table or a copy job.
  struct TailRegion {
    TailRegion(cxlpool_region* r, uint8_t* a, uint32_t t) : region(r), addr(a), tokens(t) {}
    ~TailRegion();
    TailRegion(const TailRegion&) = delete;
    TailRegion& operator=(const TailRegion&) = delete;
    cxlpool_region* region;
    uint8_t* addr;
    uint32_t tokens;
  };
  using TailKey = std::pair<uint64_t, uint64_t>;
  struct Ticket {
    uint64_t id = 0;
    Kind kind = Kind::kOffload;
    cxlpool_kv* kv = nullptr;
    cxlpool_kv_namespace ns{};
    uint32_t row = 0;
    std::vector<uint32_t> tokens;
    std::vector<cxlpool_kv_key> keys;
    uint64_t chunk_bytes = 0;
    size_t next = 0;        // offload: first key of the batch in flight
    size_t batch = 0;       // keys in it
    size_t max_batch = 0;   // what fits the put window
    uint32_t to_submit = 0; // op waiting for ring room; 0: none
    bool in_flight = false;
    uint32_t copies = 0;    // jobs on the copy thread
    bool complete = false;  // no more ring ops; done once copies are back
    bool done = false;
    bool pinned = false;
    uint64_t reservation = 0;
    uint64_t lease = 0;
    std::vector<cxlpool_kv_key> commit_keys;
    TailKey tail_key{};
    std::shared_ptr<TailRegion> tail;  // offload: registered once copied; restore: dropped once copied
    int status = 0;         // positive errno once failed
    std::string detail;  // what failed, when a copy did
    uint64_t tokens_done = 0;
  };

  Result<std::shared_ptr<Ticket>> start(Kind kind, cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                        std::span<const uint32_t> tokens);
  uint64_t admit(const std::shared_ptr<Ticket>& t);
  void pump(Ticket& t);
  void reap(cxlpool_kv* kv, int timeout_ms);
  void on_completion(Ticket& t, const cxlpool_kv_completion& c);
  void on_put_begin(Ticket& t, const cxlpool_kv_completion& c);
  void on_get(Ticket& t, const cxlpool_kv_completion& c);
  void finish(Ticket& t, int error);
  void settle(Ticket& t);
  void copy(Ticket& t, std::vector<CopySegment> segments, uint32_t then_op, std::shared_ptr<void> keep = {});
  // Acts on the copy jobs that came back: their tickets' next ops.
  void drain();

  TailKey tail_key(const cxlpool_kv_namespace& ns, std::span<const uint32_t> tokens) const;
  Result<std::shared_ptr<TailRegion>> make_tail(uint32_t count);
  // Device arenas: the backend's copy engine, opened by the first transfer.
  Result<void> open_engine();
  uint32_t full_tokens(const Ticket& t) const { return static_cast<uint32_t>(t.keys.size()) * t.ns.chunk_tokens; }

  KvArena& arena_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Ticket>> tickets_;
  std::map<TailKey, std::shared_ptr<TailRegion>> tails_;
  std::unique_ptr<hal::GpuCopyEngine> engine_;  // device arenas only
  // Last member: destroyed (thread stopped) before the engine, tickets and
  // tails its jobs use.
  CopyWorker copier_;
};

}  // namespace cxlpool::client::arena
