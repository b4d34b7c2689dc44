// SPDX-License-Identifier: Apache-2.0
#include "posix_block_device.hpp"

#include <unistd.h>

#include <cerrno>
#include <deque>

#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::drivers {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

class PosixBlockDevice final : public hal::BlockDevice {
 public:
  PosixBlockDevice(const std::string& path, hal::OpenedBlockFile file, const hal::BlockOpenOptions& options)
      : BlockDevice(path, std::move(file.geometry), options.direct, options.queue_depth),
        fd_(std::move(file.fd)) {}

  const char* backend_name() const override { return "posix"; }

 protected:
  Result<void> submit_impl(std::span<const IoRequest> requests) override {
    for (const IoRequest& r : requests) done_.push_back(execute(r));
    return {};
  }

  Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t, std::chrono::nanoseconds) override {
    // Every submitted request already completed, so `min` is always met.
    std::size_t n = 0;
    while (n < out.size() && !done_.empty()) {
      out[n++] = done_.front();
      done_.pop_front();
    }
    return n;
  }

  Result<void> register_buffers_impl(std::span<const iovec>) override { return {}; }

 private:
  IoCompletion execute(const IoRequest& r) const {
    IoCompletion c{r.user_data, 0, r.op, r.length};
    ssize_t rc = 0;
    do {
      switch (r.op) {
        case IoOp::kRead: rc = ::pread(fd_.get(), r.buffer, r.length, static_cast<off_t>(r.offset)); break;
        case IoOp::kWrite: rc = ::pwrite(fd_.get(), r.buffer, r.length, static_cast<off_t>(r.offset)); break;
        case IoOp::kFsync: rc = ::fsync(fd_.get()); break;
        case IoOp::kFdatasync: rc = ::fdatasync(fd_.get()); break;
      }
    } while (rc < 0 && errno == EINTR);
    // One system call per request, like one io_uring SQE: a short transfer is
    // reported as such rather than retried.
    c.result = rc < 0 ? -errno : rc;
    return c;
  }

  UniqueFd fd_;
  std::deque<IoCompletion> done_;
};

}  // namespace

Result<std::unique_ptr<hal::BlockDevice>> open_posix_block_device(const std::string& path,
                                                                 const hal::BlockOpenOptions& options) {
  if (options.queue_depth == 0) return fail(EINVAL, "posix block device: queue depth 0");
  auto file = hal::open_block_file(path, options);
  if (!file) return tl::unexpected(file.error());
  return std::unique_ptr<hal::BlockDevice>(new PosixBlockDevice(path, std::move(*file), options));
}

}  // namespace cxlpool::drivers
