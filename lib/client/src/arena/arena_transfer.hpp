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
// The arena reaps the kv handle's completions while tickets are in flight:
// the caller must not use cxlpool_kv_submit/reap on that handle meanwhile
// (the blocking helpers are fine). Host-memory backends only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

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

 private:
  enum class Kind { kOffload, kRestore };
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
    uint64_t reservation = 0;
    uint64_t lease = 0;
    std::vector<cxlpool_kv_key> commit_keys;
    bool done = false;
    int status = 0;         // positive errno once failed
    uint64_t tokens_done = 0;
  };
  struct Tail {
    cxlpool_region* region = nullptr;
    uint32_t tokens = 0;
  };
  using TailKey = std::pair<uint64_t, uint64_t>;

  Result<std::shared_ptr<Ticket>> start(Kind kind, cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t row,
                                        std::span<const uint32_t> tokens);
  void pump(Ticket& t);
  void reap(cxlpool_kv* kv, int timeout_ms);
  void on_completion(Ticket& t, const cxlpool_kv_completion& c);
  void on_put_begin(Ticket& t, const cxlpool_kv_completion& c);
  void on_get(Ticket& t, const cxlpool_kv_completion& c);
  void finish(Ticket& t, int error);

  TailKey tail_key(const cxlpool_kv_namespace& ns, std::span<const uint32_t> tokens) const;
  Result<void> store_tail(const Ticket& t);
  bool load_tail(const Ticket& t);  // true when the tail was there and copied back
  void drop_tail(const TailKey& key);

  // Packs tokens [first, first + count) of every layer's K and V.
  void gather(uint32_t row, uint32_t first, uint32_t count, uint8_t* dst) const;
  void scatter(uint32_t row, uint32_t first, uint32_t count, const uint8_t* src) const;

  KvArena& arena_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Ticket>> tickets_;
  std::map<TailKey, Tail> tails_;
};

}  // namespace cxlpool::client::arena
