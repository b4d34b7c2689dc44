// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::drivers {

// BlockEngine/aio: Linux native AIO (io_setup/io_submit/io_getevents) with
// one context of options.queue_depth events, one io_submit per batch. Only
// O_DIRECT I/O is asynchronous in the kernel; buffered requests complete
// inside io_submit, as with fio's libaio engine. Registered buffers are
// accepted and used as plain buffers.
Result<std::unique_ptr<hal::BlockDevice>> open_aio_block_device(const std::string& path,
                                                               const hal::BlockOpenOptions& options);

}  // namespace cxlpool::drivers
