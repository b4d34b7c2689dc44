/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxlpool: KV arenas (C ABI), vAttention style. docs/kv-arena.md
 * describes them; this header is the contract.
 *
 * An arena reserves, per layer, one virtually contiguous K tensor and one V
 * tensor laid out [max_batch][max_context][kv_heads][head_dim] (or, with
 * CXLPOOL_ARENA_LAYOUT_FUSED, one tensor [layers][2][max_batch][max_context]
 * [kv_heads][head_dim]). A request id (reqid) is a batch row. Physical memory
 * is mapped under a row only as far as the row's sequence has grown, in
 * pages of `page_bytes`, so unmodified kernels that index a contiguous
 * tensor work while memory follows actual use.
 *
 * Backing: the `host` backend maps chunks of daemon-managed regions (memfds
 * on the tier `tier_id`: DRAM or CXL) with MAP_FIXED; the `cuda` backend
 * maps device memory (or daemon host/CXL memory exported to CUDA). Memory
 * comes from the daemon in regions of `region_bytes` and is charged to the
 * client's quota.
 *
 * Reclamation is deferred: free_reqid keeps the row's pages mapped and hands
 * them to the next row that needs pages (moved by unmap+map of the same
 * physical chunks, never copied); they are really unmapped only when the
 * arena is over `memory_limit_bytes` or cxlpool_kv_arena_trim is called.
 *
 * Errors are negative errno values:
 *   -EINVAL  bad config or argument      -ENOMEM  over memory_limit_bytes
 *   -ENOSPC  no free reqid                -ENOENT  reqid not allocated
 *   -ERANGE  seq_len > max_context        -ENOTSUP backend not available
 *   -EBUSY   an async step is still running (wait first)
 * Thread safety: one thread drives an arena; step_async's mapping runs on
 * the arena's own worker thread (started at create when async is asked for),
 * and offload/restore copies on a copy thread started by the first
 * offload_begin or restore_begin.
 */
#ifndef CXLPOOL_KV_ARENA_H
#define CXLPOOL_KV_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "cxlpool/cxlpool.h"
#include "cxlpool/kv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxlpool_kv_arena cxlpool_kv_arena;

enum cxlpool_arena_backend {
  CXLPOOL_ARENA_BACKEND_HOST = 0,
  CXLPOOL_ARENA_BACKEND_CUDA = 1,
};

enum cxlpool_arena_layout {
  CXLPOOL_ARENA_LAYOUT_PER_LAYER = 0, /* 2 * layers tensors */
  CXLPOOL_ARENA_LAYOUT_FUSED = 1,     /* one tensor including the layer dimension */
};

enum cxlpool_arena_tensor_kind { CXLPOOL_ARENA_K = 0, CXLPOOL_ARENA_V = 1 };

typedef struct cxlpool_kv_arena_config {
  uint32_t layers;
  uint32_t kv_heads;
  uint32_t head_dim;
  uint32_t dtype_bytes;       /* 1, 2 or 4 */
  uint32_t max_batch;         /* rows (reqids) */
  uint32_t max_context;       /* tokens per row */
  uint64_t page_bytes;        /* physical chunk; 0: 2 MiB (host: >= 64 KiB, power of two) */
  uint32_t layout;            /* enum cxlpool_arena_layout */
  uint32_t backend;           /* enum cxlpool_arena_backend */
  int32_t device;             /* cuda device ordinal */
  uint32_t tier_id;           /* daemon tier backing the pages; UINT32_MAX: host: first DRAM tier,
                                 cuda: device memory (a tier: daemon host-NUMA memory) */
  uint64_t region_bytes;      /* daemon memory taken at a time; 0: 64 MiB */
  uint64_t memory_limit_bytes;/* most physical memory mapped at once; 0: no limit */
  uint32_t async;             /* 1: start the worker thread for step_async */
  uint32_t reserved;
} cxlpool_kv_arena_config;

int cxlpool_kv_arena_create(cxlpool_client *client, const cxlpool_kv_arena_config *config,
                            cxlpool_kv_arena **out);
/* Unmaps everything, releases the reservations and the daemon regions. */
void cxlpool_kv_arena_destroy(cxlpool_kv_arena *arena);

/* Base address of a tensor (PER_LAYER: layer's K or V; FUSED: layer and
 * kind are ignored and the fused tensor's base is returned) and the byte
 * strides: per row (reqid) and per token. */
typedef struct cxlpool_kv_arena_tensor {
  uint64_t base;          /* host pointer or CUdeviceptr */
  uint64_t row_stride;    /* bytes between reqid r and r+1 */
  uint64_t token_stride;  /* bytes between token t and t+1 (kv_heads*head_dim*dtype_bytes) */
  uint64_t bytes;         /* the whole tensor's virtual size */
} cxlpool_kv_arena_tensor;
int cxlpool_kv_arena_get_tensor(const cxlpool_kv_arena *arena, uint32_t layer, uint32_t kind,
                                cxlpool_kv_arena_tensor *out);

int cxlpool_kv_arena_alloc_reqid(cxlpool_kv_arena *arena, uint32_t *reqid);
/* The row's pages stay mapped for reuse (deferred reclamation). */
int cxlpool_kv_arena_free_reqid(cxlpool_kv_arena *arena, uint32_t reqid);

/* seq_lens[r] for r < n (n <= max_batch): tokens row r must hold; entries of
 * rows not allocated must be 0. On return every allocated row has memory
 * for seq_lens[r] tokens in every layer. Rows only grow here; shrinking is
 * free_reqid's job. */
int cxlpool_kv_arena_step(cxlpool_kv_arena *arena, const uint32_t *seq_lens, size_t n);
/* Same, but returns at once; the worker maps ahead (the next `lookahead`
 * tokens per row, config default page-sized). cxlpool_kv_arena_wait blocks
 * until the last async step has what it needs and returns its result: it
 * cuts the step's map-ahead short at the next page group, so the caller
 * never waits for speculation (later steps map the rest). A step() while
 * one is running waits for it first. */
int cxlpool_kv_arena_step_async(cxlpool_kv_arena *arena, const uint32_t *seq_lens, size_t n);
int cxlpool_kv_arena_wait(cxlpool_kv_arena *arena);

/* Unmaps every page no row needs (the deferred pool) down to `keep_bytes`
 * mapped in total, returning the daemon regions that become empty. */
int cxlpool_kv_arena_trim(cxlpool_kv_arena *arena, uint64_t keep_bytes);

typedef struct cxlpool_kv_arena_stats {
  uint64_t reserved_bytes;   /* virtual */
  uint64_t mapped_bytes;     /* physical mapped, in use + deferred */
  uint64_t pages_in_use;     /* mapped under live rows */
  uint64_t pages_deferred;   /* mapped, waiting for reuse */
  uint64_t region_bytes;     /* taken from the daemon */
  uint64_t maps, unmaps, reuses;
  uint64_t map_ns_total, unmap_ns_total;
  uint64_t map_ns_max;
  uint64_t steps, async_steps;
  uint64_t step_ns_total, step_ns_max;  /* time the caller spent in step() / step_async() */
  uint32_t rows_active;
  uint32_t backend;          /* enum cxlpool_arena_backend in use */
} cxlpool_kv_arena_stats;
int cxlpool_kv_arena_get_stats(const cxlpool_kv_arena *arena, cxlpool_kv_arena_stats *out);

/* ---- Offload and restore through the KV store ----
 *
 * A preempted row's KV goes to the store chunk by chunk (chunk = the
 * namespace's chunk_tokens tokens of every layer's K and V, gathered into
 * one store chunk in the order layer, K/V, token, head, dim) under the keys
 * of its tokens; a partial tail chunk goes to a private pool region. Both
 * run asynchronously: begin returns a ticket, cxlpool_kv_arena_offload_poll
 * reports progress (and submits the next store request), and the copies run
 * on the arena's copy thread, so they overlap other rows' steps. Restore maps
 * the row as far as needed and copies the chunks back; chunks the store has
 * lost (evicted) are reported so the caller recomputes from that token on.
 * Offloading a row does not free it: call free_reqid once the ticket is done
 * (a row freed earlier keeps its pages, not reused by alloc_reqid or
 * reclaimed, until its ticket is done).
 */
int cxlpool_kv_arena_offload_begin(cxlpool_kv_arena *arena, cxlpool_kv *kv,
                                   const cxlpool_kv_namespace *ns, uint32_t reqid,
                                   const uint32_t *tokens, size_t n_tokens, uint64_t *ticket);
int cxlpool_kv_arena_restore_begin(cxlpool_kv_arena *arena, cxlpool_kv *kv,
                                   const cxlpool_kv_namespace *ns, uint32_t reqid,
                                   const uint32_t *tokens, size_t n_tokens, uint64_t *ticket);
/* 0 = done (restored_tokens: how many leading tokens now hold their KV;
 * the caller recomputes the rest), -EINPROGRESS = still running (makes
 * progress when called), other negative errno = failed. timeout_ms: 0 polls,
 * -1 waits. restored_tokens may be NULL. */
int cxlpool_kv_arena_offload_poll(cxlpool_kv_arena *arena, uint64_t ticket, int timeout_ms,
                                  uint64_t *restored_tokens);

#ifdef __cplusplus
}
#endif

#endif /* CXLPOOL_KV_ARENA_H */
