/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxlpool: the KV-cache store's client API (C ABI). docs/kvstore.md
 * describes the store; this header is the contract.
 *
 * A cxlpool_kv is one connection's data path to the daemon's KV store: a
 * request ring and a completion ring in shared memory, a private writable
 * put window, and for each namespace opened for reading its views of the
 * store's arenas, mapped read-only (no chunk of a namespace the caller may
 * not read is ever mapped). Requests are batched
 * and asynchronous (cxlpool_kv_submit + cxlpool_kv_reap, or an eventfd for an
 * external poll loop); the blocking helpers below are built on them.
 *
 * Keys: a chunk is `chunk_tokens` tokens of one namespace (model, layout,
 * dtype, tensor-parallel rank). Its key is XXH3-128 of the parent chunk's
 * key, the namespace fingerprint and the token ids (lib/kvcache chunk_key.hpp
 * gives the exact bytes), so equal keys mean equal prefixes. A partial
 * trailing chunk never gets a key.
 *
 * Zero copy: a get returns pointers into the namespace's views that stay
 * valid and unchanged until the lease is released (or the cxlpool_kv is
 * closed).
 *
 * Errors are negative errno values as in cxlpool.h, plus:
 *   -EAGAIN   no room in the rings or the put window (reap, then retry)
 *   -EDQUOT   the connection's lease + reservation quota is used up
 *   -ENOENT   unknown reservation or lease
 *   -EACCES   a namespace this handle did not open with the right the
 *             request needs (read: lookup, get, prefetch; write: put,
 *             delete), an unknown one included
 *   -EMSGSIZE a chunk larger than the store's slot size
 *   -EPIPE    the daemon broke the ring protocol (the handle is unusable)
 *   -ENOTSUP  the daemon runs without a KV store ([kvstore] disabled)
 *
 * Thread safety: calls on one cxlpool_kv are serialized by an internal lock.
 * Completions of cxlpool_kv_submit are only returned by cxlpool_kv_reap; the
 * blocking helpers never steal them.
 */
#ifndef CXLPOOL_KV_H
#define CXLPOOL_KV_H

#include <stddef.h>
#include <stdint.h>

#include "cxlpool/cxlpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxlpool_kv cxlpool_kv;

/* A 128-bit chunk key (XXH3-128 low and high halves). */
typedef struct cxlpool_kv_key {
  uint64_t lo;
  uint64_t hi;
} cxlpool_kv_key;

enum cxlpool_kv_tier {
  CXLPOOL_KV_TIER_DRAM = 0,
  CXLPOOL_KV_TIER_CXL = 1,
  CXLPOOL_KV_TIER_SSD = 2,       /* lookup answers only: not mapped */
  CXLPOOL_KV_TIER_PUT_WINDOW = 0xff,
};

/* cxlpool_kv_location.flags */
#define CXLPOOL_KV_LOC_SSD_COPY (1u << 0) /* the chunk is also on SSD */
#define CXLPOOL_KV_LOC_CACHED (1u << 1)   /* put_begin: already stored, do not write */

/* Where a chunk's bytes are in this process. `data` is NULL for SSD. */
typedef struct cxlpool_kv_location {
  void *data;        /* read-only for arena tiers; writable for the put window */
  uint64_t offset;   /* in the arena, i.e. the namespace's view of it (or put window) */
  uint32_t length;
  uint16_t tier;     /* enum cxlpool_kv_tier */
  uint16_t flags;
} cxlpool_kv_location;

typedef struct cxlpool_kv_options {
  uint32_t sq_entries;        /* 0: daemon default */
  uint32_t cq_entries;        /* 0: daemon default */
  uint64_t put_window_bytes;  /* 0: daemon default (it caps the value) */
} cxlpool_kv_options;

/* Opens the connection's KV data path (one per client; -EBUSY for a second).
 * opts may be NULL. */
int cxlpool_kv_open(cxlpool_client *client, const cxlpool_kv_options *opts, cxlpool_kv **out);
/* Releases every lease of this handle and unmaps. Uncommitted reservations
 * keep their put-window slots until the connection closes (protocol version 1
 * has no abort), and the connection cannot open a second data path. NULL: no-op. */
void cxlpool_kv_close(cxlpool_kv *kv);

/* Store facts from the open. */
typedef struct cxlpool_kv_info {
  uint64_t slot_bytes;             /* largest chunk */
  uint64_t put_window_bytes;
  uint64_t quota_bytes;            /* 0: unlimited */
  uint64_t arena_bytes[2];         /* dram, cxl; 0: absent */
  uint64_t tier_bandwidth_bps[3];  /* dram, cxl, ssd; 0: absent */
  uint64_t tier_latency_ns[3];
} cxlpool_kv_info;
int cxlpool_kv_get_info(const cxlpool_kv *kv, cxlpool_kv_info *out);

typedef struct cxlpool_kv_namespace_spec {
  const char *model_id;   /* e.g. model name + weights digest */
  const char *layout;     /* e.g. "vllm-paged-nhd" */
  const char *dtype;      /* e.g. "bf16" */
  uint32_t tp_rank;
  uint32_t tp_size;       /* >= 1 */
  uint32_t chunk_tokens;  /* 0: 256 */
  /* Read (lookup, get, prefetch) and write (put, delete) bits for the owner
   * (the uid that first opens the namespace), its group and others, as
   * 0640; at most 0666. 0: 0600 when this open creates the namespace, else
   * whatever it has. Only the owner (or an admin) may widen it later. */
  uint32_t mode;
} cxlpool_kv_namespace_spec;

typedef struct cxlpool_kv_namespace {
  uint64_t id;             /* the daemon's id, used in requests */
  uint64_t fingerprint_hi;
  uint64_t fingerprint_lo;
  uint32_t chunk_tokens;
} cxlpool_kv_namespace;

/* Registers (or finds) a namespace and maps its views of the arenas read-only
 * when the caller may read it. -EINVAL for an empty string, tp_rank >=
 * tp_size or mode bits outside 0666; -EACCES when the namespace's mode gives
 * the caller neither read nor write; -EPERM when its owner asks for a mode
 * that takes rights away; -ENOSPC when the daemon has too many namespaces;
 * -ENOMEM when it cannot map another namespace's views. */
int cxlpool_kv_namespace_open(cxlpool_kv *kv, const cxlpool_kv_namespace_spec *spec,
                              cxlpool_kv_namespace *out);

/* Keys of the full chunks of tokens[0..n_tokens), chained from *parent (NULL:
 * a sequence start). Pure computation, no daemon. Returns the number of keys
 * written (n_tokens / chunk_tokens), -ENOSPC when max_keys is too small. */
int cxlpool_kv_compute_keys(const cxlpool_kv_namespace *ns, const uint32_t *tokens, size_t n_tokens,
                            const cxlpool_kv_key *parent, cxlpool_kv_key *keys, size_t max_keys);

/* ---- Asynchronous requests ---- */

enum cxlpool_kv_op {
  CXLPOOL_KV_LOOKUP = 1,
  CXLPOOL_KV_PUT_BEGIN = 2,
  CXLPOOL_KV_PUT_COMMIT = 3,
  CXLPOOL_KV_GET = 4,
  CXLPOOL_KV_RELEASE = 5,
  CXLPOOL_KV_PREFETCH = 6,
  CXLPOOL_KV_DELETE = 7,
};
#define CXLPOOL_KV_LOOKUP_COST_CUTOFF (1u << 0) /* lookup: result1 = cut-off */
#define CXLPOOL_KV_COMMIT_TO_SSD (1u << 1) /* put_commit: chunks to the SSD log only; result1 = chunks stored so */
#define CXLPOOL_KV_COMMIT_CHECKSUMS (1u << 2) /* put_commit: param1 points at each key's CRC-32C */

typedef struct cxlpool_kv_request {
  uint64_t user_data;           /* echoed in the completion */
  uint32_t op;                  /* enum cxlpool_kv_op */
  uint32_t flags;               /* CXLPOOL_KV_LOOKUP_COST_CUTOFF (lookup), CXLPOOL_KV_COMMIT_TO_SSD,
                                   CXLPOOL_KV_COMMIT_CHECKSUMS (put_commit); any other bit, or one
                                   on another op: -EINVAL */
  uint64_t namespace_id;
  const cxlpool_kv_key *keys;   /* copied at submit */
  uint32_t n_keys;              /* 0 for release, >= 1 otherwise */
  uint64_t param0;              /* put_begin: chunk bytes; put_commit: reservation; release: lease;
                                   lookup with COST_CUTOFF: prompt tokens */
  uint64_t param1;              /* lookup with COST_CUTOFF: declared prefill tokens/s;
                                   put_commit with CXLPOOL_KV_COMMIT_CHECKSUMS: the address
                                   ((uint64_t)(uintptr_t)) of n_keys CRC-32C values, each
                                   key's chunk as written (copied at submit; not 0) */
} cxlpool_kv_request;

typedef struct cxlpool_kv_completion {
  uint64_t user_data;
  int32_t status;               /* 0 or a negative errno */
  uint32_t op;
  uint64_t result0;             /* lookup: prefix length; put_begin: reservation; put_commit:
                                   committed; get: lease (0: nothing leased); prefetch: queued;
                                   delete: deleted */
  uint64_t result1;             /* lookup+COST_CUTOFF: chunks worth loading; put_commit: chunks
                                   stored on the SSD log only (COMMIT_TO_SSD; else 0); get: chunks
                                   leased */
  uint64_t result2;             /* lookup: chunks right after the prefix that other daemons of the
                                   pod hold (a get would fetch them; not in locations); 0 in a
                                   single-host pod */
  const cxlpool_kv_location *locations; /* valid until the next reap on this handle */
  uint32_t n_locations;
} cxlpool_kv_completion;

/* Queues requests and publishes them (one doorbell for the batch). Returns
 * how many were queued (a prefix of reqs): fewer when the rings are full,
 * -EAGAIN when none fit. */
int cxlpool_kv_submit(cxlpool_kv *kv, const cxlpool_kv_request *reqs, size_t n);
/* Returns up to max completions; waits up to timeout_ms (0: never, -1:
 * forever) for the first. */
int cxlpool_kv_reap(cxlpool_kv *kv, cxlpool_kv_completion *out, size_t max, int timeout_ms);
/* Readable when completions may be waiting, for an external poll loop: call
 * cxlpool_kv_arm() before sleeping on it (returns 0 when completions are
 * already there: do not sleep, reap), then reap after waking. */
int cxlpool_kv_eventfd(const cxlpool_kv *kv);
int cxlpool_kv_arm(cxlpool_kv *kv);
/* Requests submitted and not yet reaped. */
uint64_t cxlpool_kv_in_flight(const cxlpool_kv *kv);

/* ---- Blocking helpers (one request each, waits for its completion) ---- */

/* Longest cached prefix of keys; its locations in locs (may be NULL,
 * else room for n). Not pinned: use get to read. */
int cxlpool_kv_lookup(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n,
                      cxlpool_kv_location *locs);
/* Reserves n put-window slots of chunk_bytes; slots[i] is where chunk i is
 * written (flag CXLPOOL_KV_LOC_CACHED: it is already stored, skip it). */
int cxlpool_kv_put_begin(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n,
                         uint64_t chunk_bytes, uint64_t *reservation, cxlpool_kv_location *slots);
/* Commits the listed keys of the reservation (the rest are dropped). Returns
 * the number committed. From the commit on, the reservation's put-window
 * slots are the daemon's until a put_begin hands them out again: it may
 * still be copying a chunk out of its slot after answering, and drops a
 * chunk whose slot changed meanwhile (docs/kvstore.md "Copies behind the
 * answer"). */
int cxlpool_kv_put_commit(cxlpool_kv *kv, uint64_t ns_id, uint64_t reservation,
                          const cxlpool_kv_key *keys, uint32_t n);
/* cxlpool_kv_put_commit with flags: 0 or CXLPOOL_KV_COMMIT_TO_SSD, which
 * stores the chunks on the daemon's SSD log only, written from the put window
 * where the log can (no copy into a DRAM slot); a daemon without an SSD log
 * stores them as a commit without the flag does. *on_ssd (may be NULL) is
 * set to the chunks stored on the SSD log only (0 without the flag), on
 * success only. Returns the number committed; -EINVAL for any other flag. */
int cxlpool_kv_put_commit_flags(cxlpool_kv *kv, uint64_t ns_id, uint64_t reservation,
                                const cxlpool_kv_key *keys, uint32_t n, uint32_t flags, uint64_t *on_ssd);
/* Copies bytes from src into a put-window slot (dst) and returns the
 * CRC-32C of src (Castagnoli, as cxlpool-io's verify=crc32c), taken in the
 * same pass: 4 KiB at a time, each block checksummed while it is in L1 and
 * then copied, so the checksum costs little beyond the copy. Declared with
 * the commit (CXLPOOL_KV_COMMIT_CHECKSUMS), it spares the daemon a pass over
 * the chunk before it answers: it checks the declared value against the
 * bytes it copies out of the slot instead. NULL pointers: returns 0 and
 * copies nothing. No overlap. */
uint32_t cxlpool_kv_copy_chunk(void *dst, const void *src, size_t bytes);
/* cxlpool_kv_put_commit_flags whose commit declares each chunk's CRC-32C:
 * checksums[i] for keys[i] (CXLPOOL_KV_COMMIT_CHECKSUMS is implied; flags
 * may add CXLPOOL_KV_COMMIT_TO_SSD). With it the commit of a large chunk
 * to an idle store is answered without a pass over the chunk: its copy into
 * DRAM runs behind the answer and checks the CRC, dropping a chunk that does
 * not match after the answer counted it. Where the daemon takes a chunk's
 * CRC before answering (DRAM slots its SSD log may borrow, the SSD log) a
 * mismatch is not stored and not counted, and a commit that stores no chunk
 * fails with -EBADMSG; a DRAM-only copy before the answer does not use the
 * checksum (docs/kvstore.md "Declared checksums"). -EINVAL for a NULL
 * checksums or another flag; also from a daemon older than this flag, when
 * nothing was committed (commit again without it). */
int cxlpool_kv_put_commit_checksums(cxlpool_kv *kv, uint64_t ns_id, uint64_t reservation,
                                    const cxlpool_kv_key *keys, uint32_t n, const uint32_t *checksums,
                                    uint32_t flags, uint64_t *on_ssd);
/* put_begin + copy + commit of n chunks of chunk_bytes each from data. While
 * it is the handle's only request under way (no other put, nothing
 * submitted and not reaped), the copy is cxlpool_kv_copy_chunk's and the
 * commit declares its checksums (not to a daemon older than
 * CXLPOOL_KV_COMMIT_CHECKSUMS); otherwise a memcpy.
 * Returns how many the store holds afterwards (committed plus already
 * stored). A chunk of data changed while it was copied may be refused:
 * not counted when the daemon checks before its answer (a commit whose
 * every chunk is refused so counts 0 rather than failing), dropped after
 * it when its copy runs behind. */
int cxlpool_kv_put(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n,
                   const void *const *data, uint64_t chunk_bytes);
/* cxlpool_kv_put whose commits carry flags (as cxlpool_kv_put_commit_flags:
 * 0 or CXLPOOL_KV_COMMIT_TO_SSD, else -EINVAL); *on_ssd (may be NULL) is
 * set to the chunks its commits stored on the SSD log only (chunks already
 * stored are not counted); like *on_ssd of cxlpool_kv_put_commit_flags, it
 * is left alone on failure. With CXLPOOL_KV_COMMIT_TO_SSD (and a store with
 * an SSD log) the log holds earlier rounds' put-window slots until it has
 * written them: a round that finds the window full waits for them (up to
 * 10 s, then -EAGAIN; a window full of the caller's own reservations waits
 * as long). */
int cxlpool_kv_put_flags(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n,
                         const void *const *data, uint64_t chunk_bytes, uint32_t flags, uint64_t *on_ssd);
/* Leases the longest cached prefix: returns its length, *lease (0 when it is
 * empty) and locs (room for n). SSD chunks are read into DRAM first. */
int cxlpool_kv_get(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n,
                   uint64_t *lease, cxlpool_kv_location *locs);
int cxlpool_kv_release(cxlpool_kv *kv, uint64_t lease);
/* Releases without waiting for the daemon's answer: the request is queued
 * on the ring (the daemon takes it in order, before anything submitted
 * later) and the call returns; its completion is dropped. The serving
 * loop's form: get (no lookup first: a get answers the cached prefix and
 * pins it) + release_nowait is one ring round trip. Returns 0 (also for
 * lease 0 and for a lease the daemon does not know, which is not reported),
 * or an error of the data path (-EPIPE, -ENOTCONN). When the rings are full
 * it waits for room, like cxlpool_kv_release. */
int cxlpool_kv_release_nowait(cxlpool_kv *kv, uint64_t lease);
/* Queues SSD chunks for DRAM; returns how many were queued. */
int cxlpool_kv_prefetch(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n);
/* Deletes chunks; returns how many were deleted. */
int cxlpool_kv_delete(cxlpool_kv *kv, uint64_t ns_id, const cxlpool_kv_key *keys, uint32_t n);

/* ---- Recompute or load ---- */

typedef struct cxlpool_kv_load_query {
  uint64_t prompt_tokens;
  uint32_t chunk_tokens;
  double prefill_tokens_per_s;   /* the client's measured prefill rate */
  int overlap;                   /* loading overlaps compute layer by layer */
  uint32_t pipeline_stages;      /* with overlap: usually the layer count; 0 ideal */
  const cxlpool_kv_location *chunks; /* the cached prefix (e.g. from lookup) */
  uint32_t n_chunks;
} cxlpool_kv_load_query;

typedef struct cxlpool_kv_load_decision {
  uint32_t load_chunks;          /* load chunks [0, load_chunks) */
  int should_load;               /* load_chunks > 0 */
  uint64_t recompute_tokens;
  double expected_s;             /* time with this decision */
  double full_recompute_s;
  double load_all_s;
} cxlpool_kv_load_decision;

/* The FlashGen-style cost model with the tier speeds the daemon reported.
 * Returns 1 when loading a prefix beats recomputing, 0 when not; -EINVAL for
 * a bad query. */
int cxlpool_kv_should_load(const cxlpool_kv *kv, const cxlpool_kv_load_query *query,
                           cxlpool_kv_load_decision *out);

#ifdef __cplusplus
}
#endif

#endif /* CXLPOOL_KV_H */
