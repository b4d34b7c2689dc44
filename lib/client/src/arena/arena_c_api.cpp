// SPDX-License-Identifier: Apache-2.0
// The C ABI of kv_arena.h over KvArena: argument checks, negative errno,
// nothing thrown across the boundary.
#include <span>

#include "arena_transfer.hpp"
#include "c_api_support.hpp"
#include "cxlpool/kv_arena.h"
#include "kv_arena_impl.hpp"

struct cxlpool_kv_arena {
  std::unique_ptr<cxlpool::client::arena::KvArena> impl;
};

using cxlpool::client::guarded;
using cxlpool::client::record;

namespace {

template <typename T>
int status(const cxlpool::Result<T>& r) {
  return r ? 0 : record(r.error());
}

// Offload and restore share their argument checks and ticket hand-back;
// `start` is the one call that differs.
template <typename Start>
int begin_transfer(cxlpool_kv_arena* arena, const cxlpool_kv_namespace* ns, const uint32_t* tokens,
                   size_t n_tokens, uint64_t* ticket, Start start) {
  return guarded([&] {
    if (arena == nullptr || ns == nullptr || ticket == nullptr || (tokens == nullptr && n_tokens != 0)) {
      return record(EINVAL, "kv arena: NULL argument");
    }
    auto t = start(arena->impl->transfers(), std::span<const uint32_t>(tokens, n_tokens));
    if (!t) return record(t.error());
    *ticket = *t;
    return 0;
  });
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int cxlpool_kv_arena_create(cxlpool_client* client,
                                                                   const cxlpool_kv_arena_config* config,
                                                                   cxlpool_kv_arena** out) {
  return guarded([&] {
    if (config == nullptr || out == nullptr) return record(EINVAL, "kv arena: NULL config or out");
    auto arena = cxlpool::client::arena::KvArena::create(client, *config);
    if (!arena) return record(arena.error());
    *out = new cxlpool_kv_arena{std::move(*arena)};
    return 0;
  });
}

__attribute__((visibility("default"))) void cxlpool_kv_arena_destroy(cxlpool_kv_arena* arena) {
  try {
    delete arena;
  } catch (...) {
  }
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_get_tensor(const cxlpool_kv_arena* arena, uint32_t layer,
                                                                   uint32_t kind, cxlpool_kv_arena_tensor* out) {
  return guarded([&] {
    if (arena == nullptr || out == nullptr) return record(EINVAL, "kv arena: NULL argument");
    auto t = arena->impl->tensor(layer, kind);
    if (!t) return record(t.error());
    *out = *t;
    return 0;
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_alloc_reqid(cxlpool_kv_arena* arena, uint32_t* reqid) {
  return guarded([&] {
    if (arena == nullptr || reqid == nullptr) return record(EINVAL, "kv arena: NULL argument");
    auto r = arena->impl->alloc_reqid();
    if (!r) return record(r.error());
    *reqid = *r;
    return 0;
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_free_reqid(cxlpool_kv_arena* arena, uint32_t reqid) {
  return guarded([&] {
    if (arena == nullptr) return record(EINVAL, "kv arena: NULL arena");
    return status(arena->impl->free_reqid(reqid));
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_step(cxlpool_kv_arena* arena, const uint32_t* seq_lens,
                                                                 size_t n) {
  return guarded([&] {
    if (arena == nullptr || (seq_lens == nullptr && n != 0)) return record(EINVAL, "kv arena: NULL argument");
    return status(arena->impl->step(std::span<const uint32_t>(seq_lens, n)));
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_step_async(cxlpool_kv_arena* arena,
                                                                       const uint32_t* seq_lens, size_t n) {
  return guarded([&] {
    if (arena == nullptr || (seq_lens == nullptr && n != 0)) return record(EINVAL, "kv arena: NULL argument");
    return status(arena->impl->step_async(std::span<const uint32_t>(seq_lens, n)));
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_wait(cxlpool_kv_arena* arena) {
  return guarded([&] {
    if (arena == nullptr) return record(EINVAL, "kv arena: NULL arena");
    return status(arena->impl->wait());
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_trim(cxlpool_kv_arena* arena, uint64_t keep_bytes) {
  return guarded([&] {
    if (arena == nullptr) return record(EINVAL, "kv arena: NULL arena");
    return status(arena->impl->trim(keep_bytes));
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_get_stats(const cxlpool_kv_arena* arena,
                                                                      cxlpool_kv_arena_stats* out) {
  return guarded([&] {
    if (arena == nullptr || out == nullptr) return record(EINVAL, "kv arena: NULL argument");
    *out = arena->impl->stats();
    return 0;
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_offload_begin(cxlpool_kv_arena* arena, cxlpool_kv* kv,
                                                                          const cxlpool_kv_namespace* ns,
                                                                          uint32_t reqid, const uint32_t* tokens,
                                                                          size_t n_tokens, uint64_t* ticket) {
  return begin_transfer(arena, ns, tokens, n_tokens, ticket, [&](auto& transfers, auto span) {
    return transfers.offload_begin(kv, *ns, reqid, span);
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_restore_begin(cxlpool_kv_arena* arena, cxlpool_kv* kv,
                                                                          const cxlpool_kv_namespace* ns,
                                                                          uint32_t reqid, const uint32_t* tokens,
                                                                          size_t n_tokens, uint64_t* ticket) {
  return begin_transfer(arena, ns, tokens, n_tokens, ticket, [&](auto& transfers, auto span) {
    return transfers.restore_begin(kv, *ns, reqid, span);
  });
}

__attribute__((visibility("default"))) int cxlpool_kv_arena_offload_poll(cxlpool_kv_arena* arena, uint64_t ticket,
                                                                         int timeout_ms, uint64_t* restored_tokens) {
  return guarded([&] {
    if (arena == nullptr) return record(EINVAL, "kv arena: NULL arena");
    auto r = arena->impl->transfers().poll(ticket, timeout_ms);
    if (!r) {
      if (r.error().code == EINPROGRESS) return -EINPROGRESS;
      return record(r.error());
    }
    if (restored_tokens != nullptr) *restored_tokens = *r;
    return 0;
  });
}

}  // extern "C"
