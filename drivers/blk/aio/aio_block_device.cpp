// SPDX-License-Identifier: Apache-2.0
#include "aio_block_device.hpp"

#include <libaio.h>

#include <cerrno>
#include <ctime>
#include <vector>

#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::drivers {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

// linux/aio_abi.h's IOCB_FLAG_IOPRIO (libaio.h and that header clash): the
// iocb's aio_reqprio is the request's I/O priority.
constexpr unsigned kIocbFlagIoprio = 1u << 1;

class AioBlockDevice final : public hal::BlockDevice {
 public:
  AioBlockDevice(const std::string& path, hal::OpenedBlockFile file, const hal::BlockOpenOptions& options,
                 io_context_t ctx)
      : BlockDevice(path, std::move(file.geometry), options.direct, options.queue_depth),
        fd_(std::move(file.fd)), ctx_(ctx), iocbs_(options.queue_depth), slots_(options.queue_depth),
        batch_(options.queue_depth), events_(options.queue_depth) {
    free_.reserve(slots_.size());
    for (std::size_t i = slots_.size(); i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
  }
  ~AioBlockDevice() override { io_destroy(ctx_); }

  const char* backend_name() const override { return "aio"; }

 protected:
  Result<void> submit_impl(std::span<const IoRequest> requests) override {
    // The base class keeps in_flight <= queue_depth, so a slot is free for
    // every request.
    std::size_t n = 0;
    for (const IoRequest& r : requests) {
      const std::uint32_t slot = free_.back();
      free_.pop_back();
      iocb* cb = &iocbs_[slot];
      switch (r.op) {
        case IoOp::kRead: io_prep_pread(cb, fd_.get(), r.buffer, r.length, static_cast<long long>(r.offset)); break;
        case IoOp::kWrite: io_prep_pwrite(cb, fd_.get(), r.buffer, r.length, static_cast<long long>(r.offset)); break;
        case IoOp::kFsync: io_prep_fsync(cb, fd_.get()); break;
        case IoOp::kFdatasync: io_prep_fdsync(cb, fd_.get()); break;
      }
      if (r.ioprio != 0) {
        cb->aio_reqprio = static_cast<short>(r.ioprio);
        cb->u.c.flags |= kIocbFlagIoprio;
      }
      cb->data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(slot));
      slots_[slot] = IoCompletion{r.user_data, 0, r.op, r.length};
      batch_[n++] = cb;
    }
    std::size_t done = 0;
    while (done < n) {
      const int rc = io_submit(ctx_, static_cast<long>(n - done), batch_.data() + done);
      if (rc > 0) {
        done += static_cast<std::size_t>(rc);
        continue;
      }
      if (rc == -EINTR) continue;
      // What the kernel did not take goes back; what it took stays in flight
      // and is accounted by the caller only if everything went in, so fail
      // only when nothing did.
      for (std::size_t i = done; i < n; ++i)
        free_.push_back(static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(batch_[i]->data)));
      if (done == 0) return fail(-rc, errno_message("io_submit", -rc));
      // Partially queued: the rest completes as errors so counts stay right.
      for (std::size_t i = done; i < n; ++i) {
        const auto slot = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(batch_[i]->data));
        IoCompletion c = slots_[slot];
        c.result = rc;
        pending_errors_.push_back(c);
      }
      break;
    }
    return {};
  }

  Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t min,
                                std::chrono::nanoseconds timeout) override {
    std::size_t n = 0;
    while (n < out.size() && !pending_errors_.empty()) {
      out[n++] = pending_errors_.back();
      pending_errors_.pop_back();
    }
    if (n == out.size()) return n;
    timespec ts{};
    timespec* tsp = hal::wait_limit(timeout, ts);
    const long want_min = static_cast<long>(min > n ? min - n : 0);
    const long want_max = static_cast<long>(std::min(out.size() - n, events_.size()));
    int rc;
    do {
      rc = io_getevents(ctx_, want_min, want_max, events_.data(), tsp);
    } while (rc == -EINTR && tsp == nullptr);
    if (rc == -EINTR) rc = 0;
    if (rc < 0) return fail(-rc, errno_message("io_getevents", -rc));
    for (int i = 0; i < rc; ++i) {
      const io_event& e = events_[static_cast<std::size_t>(i)];
      const auto slot = static_cast<std::uint32_t>(reinterpret_cast<std::uintptr_t>(e.obj->data));
      IoCompletion c = slots_[slot];
      c.result = static_cast<long>(e.res);
      free_.push_back(slot);
      out[n++] = c;
    }
    return n;
  }

  Result<void> register_buffers_impl(std::span<const iovec>) override { return {}; }
  Result<void> update_buffer_impl(std::uint32_t, const iovec&) override { return {}; }

 private:
  UniqueFd fd_;
  io_context_t ctx_;
  std::vector<iocb> iocbs_;
  std::vector<IoCompletion> slots_;
  std::vector<std::uint32_t> free_;
  std::vector<iocb*> batch_;
  std::vector<io_event> events_;
  std::vector<IoCompletion> pending_errors_;
};

}  // namespace

Result<std::unique_ptr<hal::BlockDevice>> open_aio_block_device(const std::string& path,
                                                               const hal::BlockOpenOptions& options) {
  if (options.queue_depth == 0 || options.queue_depth > 65536)
    return fail(EINVAL, "aio block device: queue depth must be 1..65536");
  auto file = hal::open_block_file(path, options);
  if (!file) return tl::unexpected(file.error());
  io_context_t ctx = nullptr;
  if (const int rc = io_setup(static_cast<int>(options.queue_depth), &ctx); rc < 0) {
    std::string msg = errno_message("io_setup(" + std::to_string(options.queue_depth) + ")", -rc);
    if (rc == -EAGAIN) msg += " (fs.aio-max-nr reached)";
    return fail(-rc, msg);
  }
  return std::unique_ptr<hal::BlockDevice>(new AioBlockDevice(path, std::move(*file), options, ctx));
}

}  // namespace cxlpool::drivers
