// SPDX-License-Identifier: Apache-2.0
// A BlockDevice that spreads its requests over worker threads, each driving
// its own queue (an io_uring ring, a posix engine...) opened on the same
// file, so that one owner thread's I/O uses several submission queues and
// cores. The owner submits and polls as with any BlockDevice; requests go to
// the workers in turn, one request each, in the order given, small ones
// (kSmallWorkerRequest bytes or less) and large ones taking separate turns,
// so that a stream alternating small and large requests (a log region's
// entry headers and the payloads written from elsewhere) spreads its large
// ones over every worker instead of giving them all to one; each worker
// submits what it was handed as one batch and posts its completions back to
// the owner (completion_fd() signals them). Completions of requests on
// different workers come in any order, and nothing orders a sync against
// writes still in flight on another worker: a caller syncs after the
// writes it covers completed (as it must with one queue too).
//
// Ownership: each queue is used by its worker thread only, except
// register_buffers(), which runs on every queue while the device is idle
// under that queue's lock. A request a worker's queue refuses completes with
// the queue's errno.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::hal {

// Requests of at most this many bytes take their own turns (see above).
inline constexpr std::uint32_t kSmallWorkerRequest = 64 * 1024;

// A checksum of a read's bytes (IoRequest::digest_bytes), run on the worker
// thread that reaped the read, before the owner hears of it: per-request CPU
// work that then spreads over the workers instead of serialising on the
// owner's thread. It must be safe to call from several threads at once.
using ReadDigest = std::uint32_t (*)(std::span<const std::byte> bytes);

// Takes the queues (at least one, all on the same file, with the same
// geometry and O_DIRECT choice; EINVAL otherwise) and starts one worker
// thread per queue. The device's queue_depth is the first queue's; every
// queue must take that many requests at once. The device's path, geometry
// and backend_name are the first queue's. With a digest, reads that ask for
// one complete digested; without, digest_bytes is ignored.
Result<std::unique_ptr<BlockDevice>> make_worker_block_device(std::vector<std::unique_ptr<BlockDevice>> queues,
                                                              ReadDigest digest = nullptr);

}  // namespace cxlpool::hal
