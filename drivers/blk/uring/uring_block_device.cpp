// SPDX-License-Identifier: Apache-2.0
#include "uring_block_device.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <deque>
#include <fstream>
#include <vector>

#include "cxlpool/hal/driver/block_driver.hpp"
#include "uring_memlock.hpp"

namespace cxlpool::drivers {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

constexpr unsigned kFixedFile = 0;  // index of our only registered file

class UringBlockDevice final : public hal::BlockDevice {
 public:
  UringBlockDevice(const std::string& path, hal::OpenedBlockFile file, const hal::BlockOpenOptions& options,
                   const io_uring& ring, bool disabled)
      : BlockDevice(path, std::move(file.geometry), options.direct, options.queue_depth),
        fd_(std::move(file.fd)), ring_(ring), slots_(options.queue_depth),
        fixed_file_(options.register_files), disabled_(disabled) {
    free_.reserve(slots_.size());
    for (std::size_t i = slots_.size(); i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
  }
  ~UringBlockDevice() override { io_uring_queue_exit(&ring_); }

  const char* backend_name() const override { return "uring"; }
  int completion_fd() const override { return efd_.get(); }

  Result<void> bind_to_thread() override {
    if (!disabled_) return {};
    // The raw call: liburing 2.3 declares io_uring_enable_rings but does not
    // export it.
    if (::syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0)
      return fail_errno("IORING_REGISTER_ENABLE_RINGS " + path());
    disabled_ = false;
    return {};
  }

  Result<void> register_file() {
    const int fd = fd_.get();
    if (const int rc = io_uring_register_files(&ring_, &fd, 1); rc < 0)
      return fail(-rc, errno_message("io_uring_register_files " + path(), -rc));
    return {};
  }

  // The kernel counts every posted CQE on the eventfd. A kernel that
  // refuses the registration leaves the device without one: callers then
  // poll while requests are in flight, so that is not an error.
  void register_completion_eventfd() {
    UniqueFd efd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!efd) return;
    if (io_uring_register_eventfd(&ring_, efd.get()) < 0) return;
    efd_ = std::move(efd);
  }

 protected:
  Result<void> submit_impl(std::span<const IoRequest> requests) override {
    if (disabled_) return fail(EBADFD, "io_uring: a single-thread ring is used before bind_to_thread()");
    // The base class keeps in_flight <= queue_depth == slots, so slots and
    // SQEs are always there (the SQ ring has at least queue_depth entries).
    for (const IoRequest& r : requests) {
      io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
      if (sqe == nullptr) {
        if (auto ok = flush(); !ok) return ok;
        sqe = io_uring_get_sqe(&ring_);
        if (sqe == nullptr) return fail(EAGAIN, "io_uring: submission queue full");
      }
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      slots_[slot] = IoCompletion{r.user_data, 0, r.op, r.length};
      const bool fixed = r.buffer_index != hal::kNoRegisteredBuffer;
      const int fd = fixed_file_ ? static_cast<int>(kFixedFile) : fd_.get();
      switch (r.op) {
        case IoOp::kRead:
          if (fixed) io_uring_prep_read_fixed(sqe, fd, r.buffer, r.length, r.offset, r.buffer_index);
          else io_uring_prep_read(sqe, fd, r.buffer, r.length, r.offset);
          break;
        case IoOp::kWrite:
          if (fixed) io_uring_prep_write_fixed(sqe, fd, r.buffer, r.length, r.offset, r.buffer_index);
          else io_uring_prep_write(sqe, fd, r.buffer, r.length, r.offset);
          break;
        case IoOp::kFsync: io_uring_prep_fsync(sqe, fd, 0); break;
        case IoOp::kFdatasync: io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC); break;
      }
      if (fixed_file_) sqe->flags |= IOSQE_FIXED_FILE;
      sqe->ioprio = r.ioprio;
      io_uring_sqe_set_data64(sqe, slot);
    }
    return flush();
  }

  Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t min,
                                std::chrono::nanoseconds timeout) override {
    std::size_t n = 0;
    while (n < out.size() && !stash_.empty()) {
      out[n++] = stash_.front();
      stash_.pop_front();
    }
    if (n < min && io_uring_cq_ready(&ring_) < min - n) {
      io_uring_cqe* cqe = nullptr;
      __kernel_timespec ts{};
      __kernel_timespec* tsp = hal::wait_limit(timeout, ts);
      const int rc = io_uring_wait_cqes(&ring_, &cqe, static_cast<unsigned>(min - n), tsp, nullptr);
      if (rc < 0 && rc != -ETIME && rc != -EINTR) return fail(-rc, errno_message("io_uring_wait_cqes", -rc));
    }
    return n + reap(out.subspan(n));
  }

  Result<void> register_buffers_impl(std::span<const iovec> buffers) override {
    if (buffers_registered_) {
      io_uring_unregister_buffers(&ring_);
      buffers_registered_ = false;
    }
    if (buffers.empty()) return {};
    const int rc = io_uring_register_buffers(&ring_, buffers.data(), static_cast<unsigned>(buffers.size()));
    if (rc < 0) {
      return fail(-rc, errno_message("io_uring_register_buffers", -rc) + (rc == -ENOMEM ? uring_memlock_hint() : ""));
    }
    buffers_registered_ = true;
    return {};
  }

  // In place (IORING_REGISTER_BUFFERS_UPDATE): requests in flight keep the
  // pages they named until they complete.
  Result<void> update_buffer_impl(std::uint32_t index, const iovec& buffer) override {
    if (!buffers_registered_) return fail(EINVAL, "io_uring: no registered buffers to update");
    const int rc = io_uring_register_buffers_update_tag(&ring_, index, &buffer, nullptr, 1);
    if (rc == 1) return {};
    if (rc >= 0) return fail(EIO, "io_uring_register_buffers_update_tag: buffer " + std::to_string(index) + " not updated");
    // A refused update leaves the old pages registered (and pinned): let
    // them go, the index is empty from now on.
    const iovec empty{nullptr, 0};
    (void)io_uring_register_buffers_update_tag(&ring_, index, &empty, nullptr, 1);
    return fail(-rc, errno_message("io_uring_register_buffers_update_tag", -rc) +
                         (rc == -ENOMEM ? uring_memlock_hint() : ""));
  }

 private:
  // Moves ready CQEs into `out` (translated back to the caller's user_data).
  std::size_t reap(std::span<IoCompletion> out) {
    std::size_t n = 0;
    io_uring_cqe* cqe = nullptr;
    while (n < out.size() && io_uring_peek_cqe(&ring_, &cqe) == 0 && cqe != nullptr) {
      const auto slot = static_cast<std::uint32_t>(io_uring_cqe_get_data64(cqe));
      IoCompletion c = slots_[slot];
      c.result = cqe->res;
      io_uring_cqe_seen(&ring_, cqe);
      free_.push_back(slot);
      out[n++] = c;
    }
    return n;
  }

  Result<void> flush() {
    if ((ring_.flags & IORING_SETUP_SQPOLL) != 0) {
      // The kernel thread takes entries when it runs; the SQ tail is already
      // published (and the thread woken if it slept), so waiting here for it
      // to catch up would only spin against it.
      const int rc = io_uring_submit(&ring_);
      if (rc < 0 && rc != -EINTR) return fail(-rc, errno_message("io_uring_submit", -rc));
      return {};
    }
    while (io_uring_sq_ready(&ring_) > 0) {
      const int rc = io_uring_submit(&ring_);
      if (rc >= 0 || rc == -EINTR) continue;
      if (rc == -EAGAIN || rc == -EBUSY) {
        // The kernel wants completions consumed first; keep them for poll.
        IoCompletion buf[16];
        std::size_t got = reap(buf);
        stash_.insert(stash_.end(), buf, buf + got);
        if (got == 0 && rc == -EAGAIN) return fail(EAGAIN, "io_uring_submit: no resources");
        continue;
      }
      return fail(-rc, errno_message("io_uring_submit", -rc));
    }
    return {};
  }

  UniqueFd fd_;
  io_uring ring_;
  std::vector<IoCompletion> slots_;
  std::vector<std::uint32_t> free_;
  std::deque<IoCompletion> stash_;
  bool buffers_registered_ = false;
  bool fixed_file_;
  bool disabled_;  // single-thread ring not yet bound to its thread
  UniqueFd efd_;
};

// IOPOLL completes only on devices with poll queues; elsewhere every I/O
// fails with EOPNOTSUPP. The device holding the file says so in sysfs
// (queue/io_poll; a partition's is its parent's). Unknown counts as fine:
// the I/O's own error then tells.
Result<void> check_io_poll(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  const dev_t dev = S_ISBLK(st.st_mode) ? st.st_rdev : st.st_dev;
  const std::string base = "/sys/dev/block/" + std::to_string(major(dev)) + ":" + std::to_string(minor(dev));
  for (const char* rel : {"/queue/io_poll", "/../queue/io_poll"}) {
    std::ifstream in(base + rel);
    int value = -1;
    if (in >> value) {
      if (value == 0)
        return fail(EOPNOTSUPP, "io_uring: hipri needs NVMe poll queues (nvme.poll_queues); " + base + rel +
                                    " is 0 for " + path);
      return {};
    }
  }
  return {};
}

}  // namespace

bool uring_refused(const Error& error) { return error.code == ENOSYS || error.code == EPERM; }

Result<std::unique_ptr<hal::BlockDevice>> open_uring_block_device(const std::string& path,
                                                                 const hal::BlockOpenOptions& options) {
  if (options.queue_depth == 0 || options.queue_depth > 32768)
    return fail(EINVAL, "uring block device: queue depth must be 1..32768");
  if (options.io_poll) {
    if (!options.direct) return fail(EINVAL, "io_uring: hipri (IOPOLL) needs direct I/O");
    if (auto ok = check_io_poll(path); !ok) return tl::unexpected(ok.error());
  }
  // What each retry drops: the single-thread flags (before 6.1), then
  // COOP_TASKRUN (before 5.19); both only save interrupts and task work.
  const bool single_thread = options.single_thread && !options.sq_poll && !options.io_poll;
  auto setup_params = [&](bool coop_taskrun, bool single) {
    io_uring_params params{};
    if (options.sq_poll) {
      params.flags |= IORING_SETUP_SQPOLL;
      params.sq_thread_idle = options.sq_poll_idle_ms;
      if (options.sq_poll_cpu != 0xffffffffu) {
        params.flags |= IORING_SETUP_SQ_AFF;
        params.sq_thread_cpu = options.sq_poll_cpu;
      }
    }
    if (options.io_poll) params.flags |= IORING_SETUP_IOPOLL;
    if (coop_taskrun) params.flags |= IORING_SETUP_COOP_TASKRUN;
    if (single) {
      // TASKRUN_FLAG lets a non-blocking peek see that completions wait to
      // be processed (liburing then enters the kernel to run them).
      params.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG |
                      IORING_SETUP_R_DISABLED;
    }
    return params;
  };
  io_uring ring{};
  bool disabled = single_thread;
  io_uring_params params = setup_params(options.coop_taskrun, single_thread);
  int rc = io_uring_queue_init_params(options.queue_depth, &ring, &params);
  if (rc == -EINVAL && single_thread) {
    disabled = false;
    params = setup_params(options.coop_taskrun, false);
    rc = io_uring_queue_init_params(options.queue_depth, &ring, &params);
  }
  if (rc == -EINVAL && options.coop_taskrun) {
    params = setup_params(false, false);
    rc = io_uring_queue_init_params(options.queue_depth, &ring, &params);
  }
  if (rc < 0) {
    const int err = -rc;
    std::string msg = errno_message("io_uring_setup", err);
    if (err == ENOSYS || err == EPERM)
      msg += " (the kernel refuses io_uring: kernel.io_uring_disabled or a seccomp filter; use the posix backend)";
    if (err == ENOMEM) msg += uring_memlock_hint();
    return fail(err, msg);
  }
  auto file = hal::open_block_file(path, options);
  if (!file) {
    io_uring_queue_exit(&ring);
    return tl::unexpected(file.error());
  }
  auto dev = std::make_unique<UringBlockDevice>(path, std::move(*file), options, ring, disabled);
  if (options.register_files) {
    if (auto ok = dev->register_file(); !ok) return tl::unexpected(ok.error());
  }
  if (options.completion_eventfd) dev->register_completion_eventfd();
  return std::unique_ptr<hal::BlockDevice>(std::move(dev));
}

}  // namespace cxlpool::drivers
