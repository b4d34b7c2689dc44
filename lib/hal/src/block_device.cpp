// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/block_device.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::hal {
namespace {

constexpr std::uint32_t kDefaultDioAlignment = 4096;

bool aligned(std::uint64_t value, std::uint32_t alignment) { return value % alignment == 0; }

bool is_data_op(IoOp op) { return op == IoOp::kRead || op == IoOp::kWrite; }

}  // namespace

const char* io_op_name(IoOp op) {
  switch (op) {
    case IoOp::kRead: return "read";
    case IoOp::kWrite: return "write";
    case IoOp::kFsync: return "fsync";
    case IoOp::kFdatasync: return "fdatasync";
  }
  return "?";
}

Result<OpenedBlockFile> open_block_file(const std::string& path, const BlockOpenOptions& options) {
  int flags = O_CLOEXEC | (options.read_only ? O_RDONLY : O_RDWR);
  if (options.direct) flags |= O_DIRECT;
  if (options.create && !options.read_only) flags |= O_CREAT;
  OpenedBlockFile out;
  out.fd.reset(::open(path.c_str(), flags, 0600));
  if (!out.fd) return fail_errno("open " + path + (options.direct ? " (O_DIRECT)" : ""));

  struct statx stx {};
  if (::statx(out.fd.get(), "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_DIOALIGN, &stx) != 0)
    return fail_errno("statx " + path);
  BlockGeometry& g = out.geometry;
  if (S_ISBLK(stx.stx_mode)) {
    g.is_block_device = true;
    std::uint64_t bytes = 0;
    int sector = 0;
    if (::ioctl(out.fd.get(), BLKGETSIZE64, &bytes) != 0) return fail_errno("BLKGETSIZE64 " + path);
    if (::ioctl(out.fd.get(), BLKSSZGET, &sector) != 0) return fail_errno("BLKSSZGET " + path);
    g.size = bytes;
    g.logical_block_size = static_cast<std::uint32_t>(sector);
    g.mem_alignment = g.offset_alignment = g.logical_block_size;
    g.alignment_source = "BLKSSZGET";
  } else if (S_ISREG(stx.stx_mode)) {
    if (options.truncate_to != 0 && !options.read_only) {
      if (::ftruncate(out.fd.get(), static_cast<off_t>(options.truncate_to)) != 0)
        return fail_errno("ftruncate " + path);
      stx.stx_size = options.truncate_to;
    }
    g.size = stx.stx_size;
    if ((stx.stx_mask & STATX_DIOALIGN) != 0) {
      if (options.direct && stx.stx_dio_offset_align == 0)
        return fail(EINVAL, path + ": file system reports no direct I/O support");
      g.mem_alignment = stx.stx_dio_mem_align;
      g.offset_alignment = stx.stx_dio_offset_align;
      g.alignment_source = "statx";
    } else {
      // The kernel does not say; 4096 satisfies every common file system.
      g.mem_alignment = g.offset_alignment = kDefaultDioAlignment;
      g.alignment_source = "default 4096";
    }
    if (g.offset_alignment != 0) g.logical_block_size = g.offset_alignment;
  } else if (S_ISCHR(stx.stx_mode) && options.allow_char_device) {
    g.is_char_device = true;
    g.size = 0;
    g.logical_block_size = 1;
    g.mem_alignment = g.offset_alignment = 1;
    g.alignment_source = "character device";
    return out;
  } else {
    return fail(EINVAL, path + (options.allow_char_device
                                    ? ": neither a regular file, a block device nor a character device"
                                    : ": neither a regular file nor a block device"));
  }
  if (!options.direct) {
    g.mem_alignment = g.offset_alignment = 1;
    g.alignment_source = "buffered";
  }
  return out;
}

BlockDevice::BlockDevice(std::string path, BlockGeometry geometry, bool direct,
                         std::uint32_t queue_depth)
    : path_(std::move(path)), geometry_(std::move(geometry)), direct_(direct),
      queue_depth_(queue_depth) {}

Result<void> BlockDevice::validate(const IoRequest& r, std::size_t index) const {
  const auto bad = [&](const std::string& why) {
    return fail(EINVAL, "request " + std::to_string(index) + " (" + io_op_name(r.op) + "): " + why);
  };
  if (r.op != IoOp::kRead && r.op != IoOp::kWrite && r.op != IoOp::kFsync &&
      r.op != IoOp::kFdatasync)
    return bad("unknown operation");
  if (r.digest_bytes != 0 && (r.op != IoOp::kRead || r.digest_bytes > r.length))
    return bad("a digest of " + std::to_string(r.digest_bytes) + " bytes on anything but a read of as many");
  if (!is_data_op(r.op)) return {};
  if (r.buffer == nullptr || r.length == 0) return bad("empty buffer");
  if (r.length > static_cast<std::uint32_t>(INT_MAX)) return bad("length above INT_MAX");
  if (r.offset > UINT64_MAX - r.length || r.offset + r.length > static_cast<std::uint64_t>(LLONG_MAX))
    return bad("offset out of range");
  const auto addr = reinterpret_cast<std::uintptr_t>(r.buffer);
  if (!aligned(r.offset, geometry_.offset_alignment) || !aligned(r.length, geometry_.offset_alignment))
    return bad("offset " + std::to_string(r.offset) + " or length " + std::to_string(r.length) +
               " not a multiple of " + std::to_string(geometry_.offset_alignment));
  if (!aligned(addr, geometry_.mem_alignment))
    return bad("buffer not aligned to " + std::to_string(geometry_.mem_alignment));
  if (r.buffer_index != kNoRegisteredBuffer) {
    if (r.buffer_index < 0 || static_cast<std::size_t>(r.buffer_index) >= registered_.size())
      return bad("no registered buffer " + std::to_string(r.buffer_index));
    const iovec& v = registered_[static_cast<std::size_t>(r.buffer_index)];
    if (v.iov_base == nullptr) return bad("registered buffer " + std::to_string(r.buffer_index) + " is empty");
    const auto base = reinterpret_cast<std::uintptr_t>(v.iov_base);
    if (addr < base || addr + r.length > base + v.iov_len)
      return bad("outside registered buffer " + std::to_string(r.buffer_index));
  }
  return {};
}

Result<void> BlockDevice::submit(std::span<const IoRequest> requests) {
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (auto ok = validate(requests[i], i); !ok) {
      stats_.rejected += requests.size();
      return ok;
    }
  }
  if (requests.size() > queue_depth_ - in_flight_) {
    stats_.rejected += requests.size();
    return fail(EAGAIN, std::to_string(requests.size()) + " requests with " +
                            std::to_string(in_flight_) + " of " + std::to_string(queue_depth_) +
                            " in flight");
  }
  if (requests.empty()) return {};
  auto ok = submit_impl(requests);
  if (!ok) {
    stats_.rejected += requests.size();
    return ok;
  }
  in_flight_ += static_cast<std::uint32_t>(requests.size());
  return {};
}

Result<std::size_t> BlockDevice::poll_completions(std::span<IoCompletion> out, std::size_t min,
                                                  std::chrono::nanoseconds timeout) {
  if (out.empty() || in_flight_ == 0) return std::size_t{0};
  if (min > in_flight_) min = in_flight_;
  if (min > out.size()) min = out.size();
  auto got = poll_impl(out, min, timeout);
  if (!got) return got;
  for (std::size_t i = 0; i < *got; ++i) {
    const IoCompletion& c = out[i];
    if (c.result < 0) {
      ++stats_.errors;
      continue;
    }
    switch (c.op) {
      case IoOp::kRead: ++stats_.reads; stats_.bytes_read += c.result; break;
      case IoOp::kWrite: ++stats_.writes; stats_.bytes_written += c.result; break;
      default: ++stats_.syncs; break;
    }
    if (is_data_op(c.op) && static_cast<std::uint64_t>(c.result) < c.length) ++stats_.short_transfers;
  }
  in_flight_ -= static_cast<std::uint32_t>(*got);
  return got;
}

Result<void> BlockDevice::register_buffers(std::span<const iovec> buffers) {
  if (in_flight_ != 0) return fail(EBUSY, "register buffers: I/O in flight");
  for (const iovec& v : buffers) {
    if ((v.iov_base == nullptr) != (v.iov_len == 0)) return fail(EINVAL, "register buffers: half-empty buffer");
  }
  if (auto ok = register_buffers_impl(buffers); !ok) return ok;
  registered_.assign(buffers.begin(), buffers.end());
  return {};
}

Result<void> BlockDevice::update_buffer(std::uint32_t index, const iovec& buffer) {
  if (index >= registered_.size()) return fail(EINVAL, "update buffer: no registered buffer " + std::to_string(index));
  if ((buffer.iov_base == nullptr) != (buffer.iov_len == 0)) return fail(EINVAL, "update buffer: half-empty buffer");
  if (auto ok = update_buffer_impl(index, buffer); !ok) {
    registered_[index] = iovec{nullptr, 0};
    return ok;
  }
  registered_[index] = buffer;
  return {};
}

Result<IoCompletion> BlockDevice::run_one(const IoRequest& request) {
  if (in_flight_ != 0) return fail(EBUSY, std::string("synchronous ") + io_op_name(request.op) + ": I/O in flight");
  if (auto ok = submit(std::span<const IoRequest>(&request, 1)); !ok) return tl::unexpected(ok.error());
  IoCompletion c;
  for (;;) {
    auto got = poll_completions(std::span<IoCompletion>(&c, 1), 1);
    if (!got) return tl::unexpected(got.error());
    if (*got == 1) return c;
  }
}

Result<std::size_t> BlockDevice::read(std::uint64_t offset, void* buffer, std::uint32_t length) {
  auto c = run_one(IoRequest{IoOp::kRead, offset, buffer, length, 0, kNoRegisteredBuffer});
  if (!c) return tl::unexpected(c.error());
  if (c->result < 0) return fail(static_cast<int>(-c->result), errno_message("read " + path_ + " at " + std::to_string(offset), static_cast<int>(-c->result)));
  return static_cast<std::size_t>(c->result);
}

Result<std::size_t> BlockDevice::write(std::uint64_t offset, const void* buffer, std::uint32_t length) {
  auto c = run_one(IoRequest{IoOp::kWrite, offset, const_cast<void*>(buffer), length, 0, kNoRegisteredBuffer});
  if (!c) return tl::unexpected(c.error());
  if (c->result < 0) return fail(static_cast<int>(-c->result), errno_message("write " + path_ + " at " + std::to_string(offset), static_cast<int>(-c->result)));
  return static_cast<std::size_t>(c->result);
}

Result<void> BlockDevice::sync(bool data_only) {
  auto c = run_one(IoRequest{data_only ? IoOp::kFdatasync : IoOp::kFsync, 0, nullptr, 0, 0, kNoRegisteredBuffer});
  if (!c) return tl::unexpected(c.error());
  if (c->result < 0) return fail(static_cast<int>(-c->result), errno_message("sync " + path_, static_cast<int>(-c->result)));
  return {};
}

}  // namespace cxlpool::hal
