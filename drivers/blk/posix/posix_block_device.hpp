// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::drivers {

// BlockEngine/posix: runs each request with pread/pwrite/fsync/fdatasync
// synchronously inside submit() and queues its completion for
// poll_completions(). Always available; the fallback when io_uring is refused.
Result<std::unique_ptr<hal::BlockDevice>> open_posix_block_device(const std::string& path,
                                                                 const hal::BlockOpenOptions& options);

}  // namespace cxlpool::drivers
