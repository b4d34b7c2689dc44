// SPDX-License-Identifier: Apache-2.0
#include "mmap_block_device.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>

#include "cxlpool/hal/driver/block_driver.hpp"

namespace cxlpool::drivers {
namespace {

using hal::IoCompletion;
using hal::IoOp;
using hal::IoRequest;

class MmapBlockDevice final : public hal::InlineBlockDevice {
 public:
  MmapBlockDevice(const std::string& path, hal::OpenedBlockFile file, const hal::BlockOpenOptions& options,
                  std::byte* map, std::size_t length)
      : InlineBlockDevice(path, std::move(file.geometry), false, options.queue_depth),
        fd_(std::move(file.fd)), map_(map), length_(length), read_only_(options.read_only) {}
  ~MmapBlockDevice() override { ::munmap(map_, length_); }

  const char* backend_name() const override { return "mmap"; }

 protected:
  IoCompletion execute(const IoRequest& r) override {
    IoCompletion c{r.user_data, 0, r.op, r.length};
    switch (r.op) {
      case IoOp::kRead:
      case IoOp::kWrite: {
        if (r.offset >= length_ || r.length > length_ - r.offset) {
          c.result = -EINVAL;
          break;
        }
        // The mapping of a read-only file is PROT_READ: a copy into it would
        // fault. EBADF, as pwrite on a descriptor opened O_RDONLY.
        if (r.op == IoOp::kWrite && read_only_) {
          c.result = -EBADF;
          break;
        }
        if (r.op == IoOp::kRead) std::memcpy(r.buffer, map_ + r.offset, r.length);
        else std::memcpy(map_ + r.offset, r.buffer, r.length);
        c.result = r.length;
        break;
      }
      case IoOp::kFsync:
      case IoOp::kFdatasync:
        c.result = ::msync(map_, length_, MS_SYNC) == 0 ? 0 : -errno;
        break;
    }
    return c;
  }

 private:
  UniqueFd fd_;
  std::byte* map_;
  std::size_t length_;
  bool read_only_;
};

}  // namespace

Result<std::unique_ptr<hal::BlockDevice>> open_mmap_block_device(const std::string& path,
                                                                const hal::BlockOpenOptions& options) {
  if (options.queue_depth == 0) return fail(EINVAL, "mmap block device: queue depth 0");
  if (options.direct) return fail(EINVAL, "mmap: a page-cache mapping cannot do direct I/O (use direct=0)");
  auto file = hal::open_block_file(path, options);
  if (!file) return tl::unexpected(file.error());
  const std::size_t length = file->geometry.size;
  if (length == 0) return fail(EINVAL, "mmap " + path + ": the file is empty (nothing to map)");
  const int prot = PROT_READ | (options.read_only ? 0 : PROT_WRITE);
  void* map = ::mmap(nullptr, length, prot, MAP_SHARED, file->fd.get(), 0);
  if (map == MAP_FAILED) return fail_errno("mmap " + path);
  return std::unique_ptr<hal::BlockDevice>(
      new MmapBlockDevice(path, std::move(*file), options, static_cast<std::byte*>(map), length));
}

}  // namespace cxlpool::drivers
