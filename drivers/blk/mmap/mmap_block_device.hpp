// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::drivers {

// BlockEngine/mmap: the file mapped MAP_SHARED once at open; a read copies
// out of the mapping and a write copies into it, so the cost measured is the
// page cache's (faults, readahead, writeback), the way a framework that
// mmaps its weights sees it. Requests complete inside submit(); fsync and
// fdatasync are msync(MS_SYNC). Buffered only (options.direct is EINVAL);
// I/O beyond the size at open is EINVAL per request; a write to a read-only
// device is EBADF per request.
Result<std::unique_ptr<hal::BlockDevice>> open_mmap_block_device(const std::string& path,
                                                                const hal::BlockOpenOptions& options);

}  // namespace cxlpool::drivers
