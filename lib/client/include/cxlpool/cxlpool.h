/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxlpool: the C ABI of the cxlpool client library.
 *
 * Error contract: every function returning int returns 0 (or a count where
 * stated) on success and a negative errno value on failure. No function
 * throws, aborts or prints; diagnostics go to the callback installed with
 * cxlpool_set_log_callback(). cxlpool_last_error() gives the daemon's message
 * for the most recent failure on the calling thread.
 *
 * Errors common to every call that talks to the daemon:
 *   -ENOTCONN   the connection was closed (daemon stopped or restarted)
 *   -EPROTO     the daemon sent a malformed reply
 *   -EINVAL     an argument is invalid (NULL handle, zero size, bad name...)
 *   -ENOMEM     the library could not allocate memory
 *
 * Thread safety: a cxlpool_client may be used from several threads at once;
 * calls on one client are serialized. A cxlpool_region must not be freed
 * while another thread uses it.
 */
#ifndef CXLPOOL_CXLPOOL_H
#define CXLPOOL_CXLPOOL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CXLPOOL_VERSION_MAJOR 0
#define CXLPOOL_VERSION_MINOR 1
#define CXLPOOL_VERSION_PATCH 0

typedef struct cxlpool_client cxlpool_client;
typedef struct cxlpool_region cxlpool_region;

/* Library version, "MAJOR.MINOR.PATCH". Never NULL. */
const char *cxlpool_version(void);

/* Static description of a negative errno returned by this library. */
const char *cxlpool_strerror(int error);

/* Message of the last failure on this thread ("" if none). Valid until the
 * next call on this thread. */
const char *cxlpool_last_error(void);

/* Log levels match syslog priorities. */
enum cxlpool_log_level {
  CXLPOOL_LOG_ERROR = 3,
  CXLPOOL_LOG_WARNING = 4,
  CXLPOOL_LOG_NOTICE = 5,
  CXLPOOL_LOG_INFO = 6,
  CXLPOOL_LOG_DEBUG = 7,
};
typedef void (*cxlpool_log_fn)(int level, const char *component, const char *message,
                               void *user);
/* Installs (or with fn == NULL removes) the process-wide log callback. Lines
 * above max_level are not produced. */
void cxlpool_set_log_callback(cxlpool_log_fn fn, void *user, int max_level);

/* ------------------------------------------------------------------ connect */

/* Writes the default control socket path into buf: $CXLPOOL_SOCKET if set,
 * else $XDG_RUNTIME_DIR/cxlpool/cxlpoold.sock for non-root users with that
 * variable, else /run/cxlpool/cxlpoold.sock. Returns the length, or
 * -ENAMETOOLONG if buf is too small. */
int cxlpool_default_socket_path(char *buf, size_t len);

/* Connects and negotiates the protocol version. socket_path NULL = default.
 * client_name (may be NULL) is shown by `cxlpoolctl clients`.
 *   -ENOENT / -ECONNREFUSED  no daemon listens there
 *   -EACCES                  the socket's mode does not admit this user
 *   -EPROTONOSUPPORT         no protocol version in common
 *   -EUSERS                  the daemon has its maximum number of clients */
int cxlpool_connect(const char *socket_path, const char *client_name, cxlpool_client **out);

/* Closes the connection. Leased regions still allocated through it are
 * released by the daemon; their local mappings stay valid until
 * cxlpool_region_free() or process exit. NULL is ignored. */
void cxlpool_disconnect(cxlpool_client *client);

/* Protocol version agreed with the daemon. */
int cxlpool_protocol_version(const cxlpool_client *client);

/* -------------------------------------------------------------------- tiers */

enum cxlpool_tier_kind {
  CXLPOOL_TIER_DRAM = 0,
  CXLPOOL_TIER_CXL = 1,
  CXLPOOL_TIER_EMULATED = 2,
};

typedef struct cxlpool_tier_info {
  uint32_t id;
  uint32_t kind;       /* enum cxlpool_tier_kind */
  int32_t numa_node;   /* -1: none of its own */
  uint32_t page_size;
  uint64_t capacity;   /* bytes the pool may hand out */
  uint64_t used;
  uint64_t free;
  uint32_t latency_ns;
  uint32_t bandwidth_mbps;
  char name[64];
} cxlpool_tier_info;

/* Fills up to cap entries; returns the number of tiers the daemon has (which
 * may exceed cap: call again with a larger array). */
int cxlpool_tiers(cxlpool_client *client, cxlpool_tier_info *tiers, size_t cap);

/* Finds a tier by name; -ENOENT if there is none. */
int cxlpool_tier_by_name(cxlpool_client *client, const char *name, cxlpool_tier_info *out);

/* ------------------------------------------------------------------ regions */

/* Allocation flags. */
#define CXLPOOL_ALLOC_HUGETLB (1u << 0)  /* huge pages (needs free huge pages) */
#define CXLPOOL_ALLOC_POPULATE (1u << 1) /* fault in and verify every page now */

/* Open flags for named regions. */
#define CXLPOOL_OPEN_WRITABLE (1u << 0)

/* Allocates a leased region: released when freed or when the connection
 * closes (also if the process dies).
 *   -ENOENT  no such tier        -EDQUOT  the caller's quota on the tier
 *   -ENOSPC  the tier is full    -EMFILE  the per-client region limit
 *   -E2BIG   size above the daemon's max_region_size
 *   -ENOMEM  the kernel could not provide the pages (e.g. no huge pages) */
int cxlpool_region_alloc(cxlpool_client *client, uint32_t tier_id, uint64_t size, uint32_t flags,
                         cxlpool_region **out);

/* Creates a named region that outlives its creator until unlinked. mode is
 * like chmod's (e.g. 0640): owner is the caller's uid, group its gid.
 * Errors as cxlpool_region_alloc, plus -EEXIST (name taken). */
int cxlpool_named_create(cxlpool_client *client, const char *name, uint32_t tier_id,
                         uint64_t size, uint32_t mode, uint32_t flags, cxlpool_region **out);

/* Opens a named region, read-only unless CXLPOOL_OPEN_WRITABLE.
 *   -ENOENT no such name   -EACCES the mode denies the access
 *   -EAGAIN a model's weights region whose tensors are still being copied in */
int cxlpool_named_open(cxlpool_client *client, const char *name, uint32_t flags,
                       cxlpool_region **out);

/* Removes the name; the memory goes when the last handle is closed.
 *   -ENOENT no such name   -EPERM neither the owner nor an admin */
int cxlpool_named_unlink(cxlpool_client *client, const char *name);

/* Maps the region into this process (MAP_SHARED; read-only for read-only
 * opens) and returns the address; repeated calls return the same address. */
int cxlpool_region_map(cxlpool_region *region, void **addr);

/* Releases the handle: unmaps it, closes its fd and tells the daemon (a
 * leased region is freed, a named one loses one handle). Safe after the
 * client disconnected. NULL is ignored. Returns 0 or a negative errno from
 * the daemon (the local resources are released regardless). */
int cxlpool_region_free(cxlpool_region *region);

uint64_t cxlpool_region_id(const cxlpool_region *region);
uint64_t cxlpool_region_size(const cxlpool_region *region);
uint32_t cxlpool_region_tier(const cxlpool_region *region);
uint32_t cxlpool_region_page_size(const cxlpool_region *region);
int cxlpool_region_writable(const cxlpool_region *region);
/* The memfd backing the region (owned by the region; dup() to keep it). */
int cxlpool_region_fd(const cxlpool_region *region);

/* -------------------------------------------------------------------- stats */

typedef struct cxlpool_stat {
  char name[96];
  uint64_t value;
} cxlpool_stat;

/* Fills up to cap counters; returns how many the daemon has. */
int cxlpool_stats(cxlpool_client *client, cxlpool_stat *stats, size_t cap);

/* ---------------------------------------------------------- access reports */

/* Applications (the KV arena, the weight streamer) tell the daemon which
 * objects of their pool regions they touch, so its tiering engine can keep
 * hot memory on the fast tier. Reports are buffered per client and published
 * in batches of 64 entries into a ring of shared memory the daemon drains on
 * its own: no system call per report. Identical back-to-back reports merge
 * into one entry with a count. Reports are best effort: when the ring is
 * full the batch's remainder is dropped and counted (the daemon shows it as
 * tiering.client.dropped), and the application is never blocked on the
 * daemon. All three calls are thread-safe (one lock per client). A child
 * process must not report through a client it inherited across fork(): the
 * ring has one producer. */

/* The access was a write (default: a read). */
#define CXLPOOL_ACCESS_WRITE (1u << 0)

/* Opens this client's access ring now, with `entries` slots (a power of two
 * up to 1048576; 0: the daemon's default, 16384). Optional: the first
 * cxlpool_access_report() opens it with the default size. One ring per
 * connection. This is the only access-report call that talks to the daemon.
 *   -EALREADY  the ring is open already (also after an implicit open)
 *   -EINVAL    entries is not 0 or a power of two up to 1048576
 *   -EBUSY     the daemon already gave this connection a ring
 *   -EPROTO    the reply does not describe a ring this library can use */
int cxlpool_access_ring_open(cxlpool_client *client, uint32_t entries);

/* Records one access of bytes [offset, offset + length) of `region` (flags:
 * 0 or CXLPOOL_ACCESS_WRITE). The region need not be mapped. Returns 0, or a
 * positive number when this call published a full batch that did not fit in
 * the ring: how many entries were dropped (the report itself is never an
 * error then).
 *   -EINVAL  NULL region, length 0, [offset, offset + length) not inside
 *            the region, or unknown flags
 *   any error of cxlpool_access_ring_open() from the implicit open on the
 *   first report; it is remembered and returned by later reports until an
 *   explicit cxlpool_access_ring_open() succeeds.
 * After the connection closed, reports land in a ring nobody drains: they
 * are dropped once it is full. */
int cxlpool_access_report(cxlpool_region *region, uint64_t offset, uint64_t length, uint32_t flags);

/* Publishes the reports buffered so far (fewer than a batch) to the ring.
 * Call it before a pause or at the end of a phase; the daemon sees nothing
 * still buffered. Returns 0, or a positive number of entries dropped because
 * the ring was full. With no ring open yet it does nothing and returns 0.
 *   -EINVAL  client is NULL */
int cxlpool_access_flush(cxlpool_client *client);

/* ------------------------------------------------------------------- admin */

typedef struct cxlpool_migrate_result {
  uint64_t pages_total;
  uint64_t pages_moved;   /* moved by this call */
  uint64_t pages_already; /* already on the target tier's node */
  uint64_t pages_absent;  /* never touched, nothing to move */
  uint64_t pages_failed;
  uint64_t bytes_moved;
  uint64_t elapsed_ns;
} cxlpool_migrate_result;

/* Moves every page of a region (id as in `cxlpoolctl regions`) to another
 * tier and makes that tier the home of its future pages. Admin only.
 *   -EPERM   the caller is not root or in the cxlpool group
 *   -ENOENT  no such region or tier   -ENOSPC / -EDQUOT  as for allocation
 *   -EBUSY   the region is being migrated already */
int cxlpool_region_migrate(cxlpool_client *client, uint64_t region_id, uint32_t target_tier,
                           cxlpool_migrate_result *out);

/* ------------------------------------------------------------- checkpoints */

/* Checkpoints (docs/ckpt.md "Through the daemon"): the daemon records a
 * process into an image on a tier, charged to the caller's quota, and starts
 * clones of it that map the image copy-on-write. */

#define CXLPOOL_CKPT_KILL (1u << 0) /* kill the process once it is checkpointed */

typedef enum cxlpool_ckpt_policy {
  CXLPOOL_CKPT_MOW = 0,    /* map the image copy-on-write */
  CXLPOOL_CKPT_MOA = 1,    /* fill each page from the image on first access */
  CXLPOOL_CKPT_HYBRID = 2, /* copy the hot pages up front, map the rest */
} cxlpool_ckpt_policy;

typedef struct cxlpool_ckpt_info {
  char name[184];
  uint64_t region_id;  /* the pool region holding the image */
  uint64_t image_bytes;
  uint64_t created_unix_ns;
  uint64_t capture_ns;
  uint32_t tier_id;
  uint32_t owner_uid;
  uint32_t pid;        /* the process it was taken from */
  uint32_t threads;
  uint32_t restores;   /* clones started from it */
} cxlpool_ckpt_info;

typedef struct cxlpool_ckpt_clone {
  int32_t pid;     /* the clone, as this process sees pids */
  int32_t keeper;  /* its pid namespace's init; killing it ends the clone */
  int32_t ns_pid;  /* the clone's pid in its namespace: the original's */
} cxlpool_ckpt_clone;

/* Checkpoints process `pidfd` (from pidfd_open; the daemon then cannot
 * catch a reused pid) as `name` on `tier_id` (UINT32_MAX: the slowest
 * tier). The caller must be able to ptrace the process itself (same uid
 * and gid, the process dumpable, no capability the caller lacks) or be an
 * admin. Blocks until the image is complete; `out` may be NULL.
 *   -EINVAL  client or name NULL, an invalid name or flags
 *   -EEXIST  a checkpoint of that name exists   -EPERM  may not trace it
 *   -ESRCH   the process is gone   -ENOENT  no such tier
 *   -ENOTSUP the process uses something a checkpoint cannot record
 *            (cxlpool_last_error names it)
 *   -EDQUOT / -ENOSPC  the image does not fit the quota or the tier */
int cxlpool_ckpt_create(cxlpool_client *client, int pidfd, const char *name, uint32_t tier_id, uint32_t flags,
                        cxlpool_ckpt_info *out);

/* Starts `count` (1..64) clones of checkpoint `name` (the caller's own, or
 * any for an admin), each in a pid namespace of its own, with `stdio_fds`
 * (three descriptors: stdin, stdout, stderr; NULL: /dev/null) as their
 * standard streams. Fills up to `cap` entries of `clones`; returns how many
 * clones started.
 *   -ENOENT  no such checkpoint (or it was removed)   -EPERM  not yours
 *   -EINVAL  client or name NULL, count out of range, policy unknown
 *   -EIO     the restorer failed (its message went to the stderr given) */
int cxlpool_ckpt_restore(cxlpool_client *client, const char *name, cxlpool_ckpt_policy policy, uint32_t count,
                         const int *stdio_fds, cxlpool_ckpt_clone *clones, size_t cap);

/* Fills up to `cap` entries; returns how many checkpoints exist. */
int cxlpool_ckpt_list(cxlpool_client *client, cxlpool_ckpt_info *out, size_t cap);

/* Removes a checkpoint (the owner or an admin); running clones keep the
 * pages they map. -ENOENT, -EPERM. */
int cxlpool_ckpt_remove(cxlpool_client *client, const char *name);

#ifdef __cplusplus
}
#endif

#endif /* CXLPOOL_CXLPOOL_H */
