// SPDX-License-Identifier: Apache-2.0
// Driver SDK for BlockEngine backends (drivers/blk/*): opening a file with
// its geometry, and the operations a block driver registers. Users open
// devices with hal::open_block_device.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/block_device.hpp"
#include "cxlpool/hal/driver/backend_driver.hpp"

namespace cxlpool::hal {

// An opened file descriptor plus its geometry; the drivers' common start.
struct OpenedBlockFile {
  UniqueFd fd;
  BlockGeometry geometry;
};

// Opens `path` per `options` and queries its geometry: block devices through
// BLKGETSIZE64/BLKSSZGET; files through statx(STATX_DIOALIGN), falling back to
// 4096 when the kernel does not report it. Fails with EINVAL when O_DIRECT was
// asked for and the file system reports no direct-I/O support.
Result<OpenedBlockFile> open_block_file(const std::string& path, const BlockOpenOptions& options);

// The kernel's wait limit for a poll_impl() timeout: `ts` filled in and
// returned, or nullptr (no limit) for BlockDevice::kWaitForever; a negative
// timeout does not wait. A template because libaio takes a `timespec` and
// liburing a `__kernel_timespec`.
template <typename Timespec>
Timespec* wait_limit(std::chrono::nanoseconds timeout, Timespec& ts) {
  if (timeout == BlockDevice::kWaitForever) return nullptr;
  const auto ns = timeout.count() < 0 ? 0 : timeout.count();
  ts.tv_sec = ns / 1'000'000'000;
  ts.tv_nsec = ns % 1'000'000'000;
  return &ts;
}

// A BlockDevice whose requests complete within submit() (a system call or a
// copy into a mapping each): the driver writes execute(); the completions
// wait here, oldest first, for poll(), which therefore always meets `min`.
// BlockDevice::submit() keeps at most queue_depth of them unpolled, so a ring
// of that many slots holds them without allocating on the data path.
class InlineBlockDevice : public BlockDevice {
 protected:
  InlineBlockDevice(std::string path, BlockGeometry geometry, bool direct, std::uint32_t queue_depth)
      : BlockDevice(std::move(path), std::move(geometry), direct, queue_depth),
        done_(queue_depth > 0 ? queue_depth : 1) {}

  // Carries out `request` now: the completion's result is the byte count or
  // -errno.
  virtual IoCompletion execute(const IoRequest& request) = 0;

  Result<void> submit_impl(std::span<const IoRequest> requests) final {
    for (const IoRequest& r : requests) {
      done_[(head_ + count_) % done_.size()] = execute(r);
      ++count_;
    }
    return {};
  }

  Result<std::size_t> poll_impl(std::span<IoCompletion> out, std::size_t, std::chrono::nanoseconds) final {
    std::size_t n = 0;
    for (; n < out.size() && count_ > 0; ++n, --count_) {
      out[n] = done_[head_];
      head_ = (head_ + 1) % done_.size();
    }
    return n;
  }

  // Requests carry buffer addresses to plain calls: nothing to register.
  Result<void> register_buffers_impl(std::span<const iovec>) override { return {}; }
  Result<void> update_buffer_impl(std::uint32_t, const iovec&) override { return {}; }

 private:
  std::vector<IoCompletion> done_;  // a ring: count_ completions from head_
  std::size_t head_ = 0;
  std::size_t count_ = 0;
};

struct BlockEngineOps {
  static constexpr BackendClass kClass = BackendClass::kBlockEngine;
  Result<std::unique_ptr<BlockDevice>> (*open)(const std::string& path, const BlockOpenOptions& options);
  // True when an open error means this engine cannot run here at all (the
  // kernel refuses io_uring: kernel.io_uring_disabled, a seccomp filter), so
  // "best available" moves on to the next engine. Null: only ENOSYS, EPERM
  // and EOPNOTSUPP count. Errors about the file itself (ENOENT, EACCES) stop
  // the search: every engine would hit them.
  bool (*refused)(const Error& error);
};

}  // namespace cxlpool::hal
