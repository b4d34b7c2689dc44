// SPDX-License-Identifier: Apache-2.0
// Thin C++ layer over cxlpool/kv_arena.h: an RAII arena and a ticket type.
// Like cxlpool.hpp, failures throw std::system_error with the errno and the
// library's message; expected outcomes are values (a ticket still running
// is `false` from poll, a restore of fewer tokens is its count). The C ABI
// underneath never throws.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "cxlpool/cxlpool.hpp"
#include "cxlpool/kv_arena.h"

namespace cxlpool {

using KvArenaConfig = cxlpool_kv_arena_config;
using KvArenaTensor = cxlpool_kv_arena_tensor;
using KvArenaStats = cxlpool_kv_arena_stats;

// Defaults every field the C struct leaves to the caller: host backend,
// per-layer layout, first DRAM tier, 2 MiB pages, 64 MiB regions, no limit.
inline KvArenaConfig kv_arena_config(uint32_t layers, uint32_t kv_heads, uint32_t head_dim, uint32_t dtype_bytes,
                                     uint32_t max_batch, uint32_t max_context) {
  KvArenaConfig c{};
  c.layers = layers;
  c.kv_heads = kv_heads;
  c.head_dim = head_dim;
  c.dtype_bytes = dtype_bytes;
  c.max_batch = max_batch;
  c.max_context = max_context;
  c.layout = CXLPOOL_ARENA_LAYOUT_PER_LAYER;
  c.backend = CXLPOOL_ARENA_BACKEND_HOST;
  c.tier_id = UINT32_MAX;
  return c;
}

class KvArena {
 public:
  KvArena() = default;
  KvArena(cxlpool_client* client, const KvArenaConfig& config) {
    check(cxlpool_kv_arena_create(client, &config, &a_), "create KV arena");
  }
  KvArena(const KvArena&) = delete;
  KvArena& operator=(const KvArena&) = delete;
  KvArena(KvArena&& o) noexcept : a_(std::exchange(o.a_, nullptr)) {}
  KvArena& operator=(KvArena&& o) noexcept {
    if (this != &o) {
      cxlpool_kv_arena_destroy(a_);
      a_ = std::exchange(o.a_, nullptr);
    }
    return *this;
  }
  ~KvArena() { cxlpool_kv_arena_destroy(a_); }

  cxlpool_kv_arena* get() const { return a_; }

  KvArenaTensor tensor(uint32_t layer, uint32_t kind) const {
    KvArenaTensor t{};
    check(cxlpool_kv_arena_get_tensor(a_, layer, kind, &t), "KV arena tensor");
    return t;
  }
  // Host backend: a typed pointer to (row, layer, kind)'s first token.
  template <typename T>
  T* row(uint32_t reqid, uint32_t layer, uint32_t kind) const {
    const auto t = tensor(layer, kind);
    return reinterpret_cast<T*>(t.base + reqid * t.row_stride);
  }

  uint32_t alloc_reqid() {
    uint32_t r = 0;
    check(cxlpool_kv_arena_alloc_reqid(a_, &r), "allocate KV arena reqid");
    return r;
  }
  void free_reqid(uint32_t reqid) { check(cxlpool_kv_arena_free_reqid(a_, reqid), "free KV arena reqid"); }

  void step(std::span<const uint32_t> seq_lens) {
    check(cxlpool_kv_arena_step(a_, seq_lens.data(), seq_lens.size()), "KV arena step");
  }
  void step_async(std::span<const uint32_t> seq_lens) {
    check(cxlpool_kv_arena_step_async(a_, seq_lens.data(), seq_lens.size()), "KV arena step_async");
  }
  void wait() { check(cxlpool_kv_arena_wait(a_), "KV arena async step"); }
  void trim(uint64_t keep_bytes = 0) { check(cxlpool_kv_arena_trim(a_, keep_bytes), "trim KV arena"); }

  KvArenaStats stats() const {
    KvArenaStats s{};
    check(cxlpool_kv_arena_get_stats(a_, &s), "KV arena stats");
    return s;
  }

  uint64_t offload_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t reqid,
                         std::span<const uint32_t> tokens) {
    uint64_t t = 0;
    check(cxlpool_kv_arena_offload_begin(a_, kv, &ns, reqid, tokens.data(), tokens.size(), &t), "offload KV row");
    return t;
  }
  uint64_t restore_begin(cxlpool_kv* kv, const cxlpool_kv_namespace& ns, uint32_t reqid,
                         std::span<const uint32_t> tokens) {
    uint64_t t = 0;
    check(cxlpool_kv_arena_restore_begin(a_, kv, &ns, reqid, tokens.data(), tokens.size(), &t), "restore KV row");
    return t;
  }
  // true when the ticket is done (*tokens: tokens stored / restored), false
  // while it still runs (timeout_ms 0 polls, -1 waits).
  bool poll(uint64_t ticket, int timeout_ms, uint64_t* tokens = nullptr) {
    const int rc = cxlpool_kv_arena_offload_poll(a_, ticket, timeout_ms, tokens);
    if (rc == -EINPROGRESS) return false;
    check(rc, "KV arena transfer");
    return true;
  }
  uint64_t finish(uint64_t ticket) {
    uint64_t tokens = 0;
    poll(ticket, -1, &tokens);
    return tokens;
  }

 private:
  cxlpool_kv_arena* a_ = nullptr;
};

}  // namespace cxlpool
