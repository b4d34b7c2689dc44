// SPDX-License-Identifier: Apache-2.0
// BlockEngine: asynchronous block I/O on a file or block device. The public
// methods validate requests (alignment, registered-buffer bounds, queue depth)
// and keep statistics; drivers implement the protected *_impl hooks. Requests
// are validated as a batch: one bad request rejects the whole batch with
// EINVAL before anything reaches the kernel. Results are reported as the
// kernel gives them (short reads stay short); nothing throws.
#pragma once

#include <sys/uio.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::hal {

enum class IoOp : std::uint8_t { kRead, kWrite, kFsync, kFdatasync };

const char* io_op_name(IoOp op);

inline constexpr std::int32_t kNoRegisteredBuffer = -1;

struct IoRequest {
  IoOp op = IoOp::kRead;
  std::uint64_t offset = 0;      // ignored for fsync/fdatasync
  void* buffer = nullptr;        // source for writes, destination for reads
  std::uint32_t length = 0;      // bytes; ignored for fsync/fdatasync
  std::uint64_t user_data = 0;   // returned unchanged in the completion
  std::int32_t buffer_index = kNoRegisteredBuffer;  // registered buffer holding [buffer, buffer+length)
  // The request's I/O priority, (class << 13) | level as ioprio_set(2)
  // takes it; 0: the submitting thread's. The aio and uring drivers pass it
  // to the kernel per request; the others issue I/O from the caller's
  // thread, whose priority applies.
  std::uint16_t ioprio = 0;
  // Reads only, at most length: ask for a digest (a checksum) of the
  // buffer's first digest_bytes once the read has filled them, taken by
  // the thread that reaps the read, so that the owner's thread does not
  // read the bytes again. Only worker devices (make_worker_block_device
  // with a digest function) take it; the others ignore it and leave the
  // completion undigested.
  std::uint32_t digest_bytes = 0;
};

struct IoCompletion {
  std::uint64_t user_data = 0;
  std::int64_t result = 0;       // bytes transferred (may be short), 0 for syncs, or -errno
  IoOp op = IoOp::kRead;
  std::uint32_t length = 0;      // bytes requested, to spot short transfers
  // IoRequest::digest_bytes: `digest` holds the digest function's value of
  // those bytes, computed in `digest_ns` nanoseconds; false when the read
  // came back short or failed, or the device takes no digests.
  bool digested = false;
  std::uint32_t digest = 0;
  std::uint32_t digest_ns = 0;
};

struct BlockOpenOptions {
  bool direct = true;            // O_DIRECT
  bool read_only = false;
  bool create = false;           // regular files only: O_CREAT
  std::uint64_t truncate_to = 0; // regular files only: ftruncate to this size when non-zero
  // Character devices (/dev/null, /dev/zero, a raw tape or serial device)
  // are refused unless set: they have no size and only a benchmark that
  // names one on purpose wants them. Their geometry is size 0, alignment 1.
  bool allow_char_device = false;
  std::uint32_t queue_depth = 32;  // most requests in flight (submitted, not yet polled)
  // io_uring only; other drivers ignore them.
  bool sq_poll = false;                  // IORING_SETUP_SQPOLL: a kernel thread submits
  std::uint32_t sq_poll_cpu = 0xffffffffu;  // pin that thread (IORING_SETUP_SQ_AFF); all ones: not pinned
  std::uint32_t sq_poll_idle_ms = 0;     // idle time before that thread sleeps; 0: the kernel's default
  bool io_poll = false;                  // IORING_SETUP_IOPOLL: completions polled (needs NVMe poll queues)
  bool register_files = true;            // the file as fixed file 0 (IOSQE_FIXED_FILE)
  // IORING_SETUP_COOP_TASKRUN: completions are not pushed into the task with
  // an interrupt; they post when it next enters the kernel. For callers that
  // wait in io_uring itself (a benchmark loop); an epoll-driven owner keeps
  // the default so a completion wakes its eventfd promptly.
  bool coop_taskrun = false;
  // An eventfd the kernel signals for every completion (completion_fd()),
  // for owners that wait in epoll. A caller that only waits in the driver
  // turns it off: each signal is a lock and a wakeup check per I/O.
  bool completion_eventfd = true;
  // io_uring: the ring serves one thread only (SINGLE_ISSUER |
  // DEFER_TASKRUN): completions are processed when that thread waits, not
  // in interrupts or task work, which is cheapest for a loop that does
  // nothing but I/O. The ring starts disabled; the thread that will use it
  // calls BlockDevice::bind_to_thread() before its first submit (buffers may
  // be registered from another thread before that). Dropped on kernels
  // before 6.1 and with sq_poll or io_poll.
  bool single_thread = false;
  // hal::open_block_device only: when every engine refuses O_DIRECT with
  // EINVAL (tmpfs, some FUSE file systems), open the file buffered instead
  // of failing. Callers that need direct I/O's alignment leave it off.
  bool buffered_fallback = false;
};

// What a device needs from the caller's I/O. For buffered opens the
// alignments are 1; logical_block_size is reported either way.
struct BlockGeometry {
  std::uint64_t size = 0;              // bytes, at open time
  std::uint32_t logical_block_size = 512;
  std::uint32_t mem_alignment = 1;     // buffer address alignment
  std::uint32_t offset_alignment = 1;  // offset and length alignment
  bool is_block_device = false;
  bool is_char_device = false;         // opened with allow_char_device
  std::string alignment_source;        // "statx", "BLKSSZGET", "default 4096", "buffered"
};

struct BlockStats {
  std::uint64_t reads = 0, writes = 0, syncs = 0;  // completed operations
  std::uint64_t bytes_read = 0, bytes_written = 0;
  std::uint64_t short_transfers = 0;   // completed with fewer bytes than requested
  std::uint64_t errors = 0;            // completions with -errno
  std::uint64_t rejected = 0;          // requests refused before submission
};

class BlockDevice {
 public:
  static constexpr std::chrono::nanoseconds kWaitForever = std::chrono::nanoseconds::max();

  virtual ~BlockDevice() = default;
  BlockDevice(const BlockDevice&) = delete;
  BlockDevice& operator=(const BlockDevice&) = delete;

  const std::string& path() const { return path_; }
  const BlockGeometry& geometry() const { return geometry_; }
  std::uint64_t size() const { return geometry_.size; }
  std::uint32_t logical_block_size() const { return geometry_.logical_block_size; }
  std::uint32_t mem_alignment() const { return geometry_.mem_alignment; }
  std::uint32_t offset_alignment() const { return geometry_.offset_alignment; }
  bool direct() const { return direct_; }
  std::uint32_t queue_depth() const { return queue_depth_; }
  std::uint32_t in_flight() const { return in_flight_; }
  const BlockStats& stats() const { return stats_; }
  virtual const char* backend_name() const = 0;

  // Queues every request or none: EINVAL (a request is malformed or
  // misaligned; the message names its index), EAGAIN (more than queue_depth
  // would be in flight; poll first). Other errors come from the driver.
  Result<void> submit(std::span<const IoRequest> requests);

  // Waits until at least `min` completions (capped at in_flight()) are ready
  // or `timeout` passes, then returns up to out.size() of them. A timeout is
  // not an error: the count may be below `min`.
  Result<std::size_t> poll_completions(std::span<IoCompletion> out, std::size_t min,
                                       std::chrono::nanoseconds timeout = kWaitForever);

  // Declares the buffers that requests may name by index (replaces any earlier
  // set). Only while nothing is in flight (EBUSY otherwise). An entry
  // {nullptr, 0} is left empty, for update_buffer() to fill later: a
  // request naming it is refused (EINVAL) until then.
  Result<void> register_buffers(std::span<const iovec> buffers);
  // Replaces registered buffer `index` ({nullptr, 0} empties it), with I/O
  // in flight or not; the caller must have no request naming `index` in
  // flight or queued (one keeps the old memory or fails). EINVAL: no such
  // index or a malformed buffer; the driver's error otherwise (ENOMEM: the
  // pages could not be pinned), after which the entry is empty. A
  // single_thread device takes it only from its bound thread (the kernel
  // refuses others: EEXIST).
  Result<void> update_buffer(std::uint32_t index, const iovec& buffer);
  std::size_t registered_buffer_count() const { return registered_.size(); }
  // Registered buffer i ({nullptr, 0}: empty); i < registered_buffer_count().
  const iovec& registered_buffer(std::size_t i) const { return registered_.at(i); }

  // An eventfd (non-blocking, owned by the device) that becomes readable when
  // completions are posted, for a caller's epoll loop; -1 when the driver has
  // none (then poll while in_flight() is non-zero). Readiness is a hint: the
  // caller reads the counter to reset it before polling completions, so a
  // completion posted after the reset wakes it again.
  virtual int completion_fd() const { return -1; }

  // Makes the calling thread the device's only user (see
  // BlockOpenOptions::single_thread); a no-op for devices without that
  // restriction.
  virtual Result<void> bind_to_thread() { return {}; }

  // Synchronous conveniences for set-up and recovery paths; they need an idle
  // device (EBUSY otherwise) and return the byte count, short or not.
  Result<std::size_t> read(std::uint64_t offset, void* buffer, std::uint32_t length);
  Result<std::size_t> write(std::uint64_t offset, const void* buffer, std::uint32_t length);
  Result<void> sync(bool data_only = true);

 protected:
  BlockDevice(std::string path, BlockGeometry geometry, bool direct, std::uint32_t queue_depth);

  virtual Result<void> submit_impl(std::span<const IoRequest> requests) = 0;
  virtual Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t min,
                                        std::chrono::nanoseconds timeout) = 0;
  virtual Result<void> register_buffers_impl(std::span<const iovec> buffers) = 0;
  virtual Result<void> update_buffer_impl(std::uint32_t index, const iovec& buffer) = 0;

 private:
  Result<void> validate(const IoRequest& request, std::size_t index) const;
  Result<IoCompletion> run_one(const IoRequest& request);

  std::string path_;
  BlockGeometry geometry_;
  bool direct_;
  std::uint32_t queue_depth_;
  std::uint32_t in_flight_ = 0;
  std::vector<iovec> registered_;
  BlockStats stats_;
};

}  // namespace cxlpool::hal
