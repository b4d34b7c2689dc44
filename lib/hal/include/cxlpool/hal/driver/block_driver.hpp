// SPDX-License-Identifier: Apache-2.0
// Driver SDK for BlockEngine backends (drivers/blk/*): opening a file with
// its geometry, and the operations a block driver registers. Users open
// devices with hal::open_block_device.
#pragma once

#include <memory>
#include <string>

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
