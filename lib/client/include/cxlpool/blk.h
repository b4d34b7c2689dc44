/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libcxlpool: a pooled block device (C ABI). docs/devpool.md ("Storage
 * engine") describes the engine; this header is the contract.
 *
 * A storage backend (cxlpool-devpool-blk) serves an SSD over a link in
 * shared memory. The application opens the link, allocates its I/O buffers
 * in the link's buffer area (the backend DMAs into and out of them: there
 * is no copy), submits reads, writes and flushes asynchronously and polls
 * for their completions. No thread is started: submit and poll drive the
 * link. One handle is used by one thread at a time; a link serves one open
 * handle at a time (the next open waits until the backend has made the
 * link fresh for it after the previous handle closed).
 *
 * Errors are negative errno values (cxlpool_strerror(), cxlpool_last_error()
 * for the detail):
 *   -EINVAL   a bad argument; a request whose offset, length or buffer is
 *             not a multiple of the device's block size (resp. buffer
 *             alignment), a zero or too long length, FUA on a non-write,
 *             an unknown op
 *   -ERANGE   a request past the device's capacity
 *   -EFAULT   a request buffer that is not inside the link's buffer area
 *             (use cxlpool_blk_buffer_alloc)
 *   -EROFS    a write to a read-only device
 *   -EAGAIN   no request fits now (max_in_flight outstanding): poll first
 *   -ENOMEM   no room in the buffer area (buffer_alloc), or memory
 *   -EPROTO   the file holds no storage link, or the backend broke the
 *             protocol (the handle is then unusable)
 *   -ETIMEDOUT the backend answered nothing for timeout_ms while requests
 *             were outstanding (open: it did not make the link ready or
 *             identify its device in time)
 *   -EBUSY    open: another handle kept the link for timeout_ms
 *   -ENOTCONN the backend is gone (its process ended), or the handle gave up
 *             on it earlier: every outstanding request has been completed
 *             with the error, none with a success it did not report
 *   errors of open(2) and mmap(2) on the link file as they are.
 * A completion's status is 0 or a negative errno from the backend: the
 * device's own error (-EIO, -ENOSPC, ...), one of the request errors above
 * when the backend refused the request, or -ETIMEDOUT / -ENOTCONN when the
 * handle gave up on the backend.
 */
#ifndef CXLPOOL_BLK_H
#define CXLPOOL_BLK_H

#include <stddef.h>
#include <stdint.h>

#include "cxlpool/cxlpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cxlpool_blk cxlpool_blk;

typedef struct cxlpool_blk_options {
  uint32_t timeout_ms;   /* a backend silent this long with requests outstanding is dead; 0: 10000 */
  uint32_t reserved;     /* 0 */
  uint64_t link_offset;  /* where the link starts in the file (a multiple of 4096); usually 0 */
} cxlpool_blk_options;

typedef struct cxlpool_blk_info {
  uint64_t capacity;       /* bytes */
  uint32_t block_size;     /* offsets and lengths are multiples of it */
  uint32_t mem_alignment;  /* buffer addresses are multiples of it (buffer_alloc gives 4096) */
  uint32_t max_transfer;   /* longest request, bytes */
  uint32_t queue_depth;    /* requests the backend keeps in flight on the device */
  uint32_t max_in_flight;  /* requests this handle may have outstanding */
  uint32_t read_only;      /* 1: writes fail with -EROFS */
  uint64_t buffer_bytes;   /* size of the link's buffer area */
} cxlpool_blk_info;

enum cxlpool_blk_op {
  CXLPOOL_BLK_FLUSH = 0,  /* makes completed writes durable; offset, length, buf must be 0 */
  CXLPOOL_BLK_WRITE = 1,
  CXLPOOL_BLK_READ = 2,
};
#define CXLPOOL_BLK_FUA 0x1u  /* write: durable when it completes */

typedef struct cxlpool_blk_request {
  uint32_t op;          /* enum cxlpool_blk_op */
  uint32_t flags;       /* CXLPOOL_BLK_FUA */
  uint64_t offset;      /* device byte offset */
  void *buf;            /* inside a buffer from cxlpool_blk_buffer_alloc; NULL for a flush */
  uint32_t length;      /* bytes */
  uint32_t reserved;    /* 0 */
  uint64_t user_data;   /* returned in the completion */
} cxlpool_blk_request;

typedef struct cxlpool_blk_completion {
  uint64_t user_data;
  int32_t status;       /* 0 or a negative errno */
  uint32_t bytes;       /* transferred (a read past the data the device has is short) */
} cxlpool_blk_completion;

/* Opens the link in `link_path` (or on a descriptor the caller keeps) and
 * identifies the device. opts may be NULL. */
int cxlpool_blk_open(const char *link_path, const cxlpool_blk_options *opts, cxlpool_blk **out);
int cxlpool_blk_open_fd(int fd, const cxlpool_blk_options *opts, cxlpool_blk **out);
/* Asks the pod allocator of the daemon on `daemon_socket` (NULL: the
 * default socket, cxlpool_default_socket_path) for a storage device for
 * `host` (a pod member's name; required), `preferred` ("name" or
 * "host/name" of a device, NULL: the least loaded), maps the pod file and
 * opens the active leg's link. The attachment lasts until close; when the
 * active leg's backend dies, the requests not yet completed are sent again
 * on the backup leg the allocator switches to (a device reachable from
 * both: docs/devpool.md), and fail with -ENOTCONN/-ETIMEDOUT only when no
 * leg takes them within timeout_ms. opts->link_offset must be 0. Errors
 * besides those above: -ENODEV no storage device is registered, -ENOSPC no
 * attachment is free (-EDQUOT: this user's limit), the connection's errors
 * (-ENOENT, -ECONNREFUSED: no daemon; -ENOTSUP: device pooling is off). */
int cxlpool_blk_attach(const char *daemon_socket, const char *host, const char *preferred,
                       const cxlpool_blk_options *opts, cxlpool_blk **out);
/* Outstanding requests are abandoned: their buffers must not be reused by
 * another handle of the same link (the backend may still write them). */
void cxlpool_blk_close(cxlpool_blk *blk);
int cxlpool_blk_get_info(const cxlpool_blk *blk, cxlpool_blk_info *out);

/* A buffer of at least `bytes` in the link's buffer area, 4096-aligned. */
int cxlpool_blk_buffer_alloc(cxlpool_blk *blk, size_t bytes, void **out);
/* -EINVAL when `buf` is not a buffer from cxlpool_blk_buffer_alloc. */
int cxlpool_blk_buffer_free(cxlpool_blk *blk, void *buf);

/* Queues requests in order and returns how many were queued (>= 1; fewer
 * than n when the queue fills), or a negative errno about reqs[0] (nothing
 * queued). A later request's error is returned when it is submitted again. */
int cxlpool_blk_submit(cxlpool_blk *blk, const cxlpool_blk_request *reqs, size_t n);
/* Waits until `min` completions are ready (or timeout_ms, -1: until the
 * outstanding requests end, which the handle's own timeout bounds) and
 * stores up to `max`; returns how many (0 on timeout or with nothing
 * outstanding). */
int cxlpool_blk_poll(cxlpool_blk *blk, cxlpool_blk_completion *out, size_t max, size_t min, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* CXLPOOL_BLK_H */
