// SPDX-License-Identifier: Apache-2.0
#include "posix_block_device.hpp"

#include <unistd.h>

#include <cerrno>

#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::drivers {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

class PosixBlockDevice final : public hal::InlineBlockDevice {
 public:
  PosixBlockDevice(const std::string& path, hal::OpenedBlockFile file, const hal::BlockOpenOptions& options)
      : InlineBlockDevice(path, std::move(file.geometry), options.direct, options.queue_depth),
        fd_(std::move(file.fd)) {}

  const char* backend_name() const override { return "posix"; }

 protected:
  IoCompletion execute(const IoRequest& r) override {
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

 private:
  UniqueFd fd_;
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
