// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/block_device.hpp"

namespace cxlpool::drivers {

// BlockEngine/uring: one io_uring of options.queue_depth entries, the file
// registered as fixed file 0 (unless options.register_files is false),
// optionally SQPOLL (options.sq_poll*) or IOPOLL (options.io_poll: EOPNOTSUPP
// when sysfs says the device has no poll queues), registered buffers used through
// READ_FIXED/WRITE_FIXED when a request names one, one io_uring_enter per
// submitted batch. When the kernel refuses io_uring the error code is ENOSYS
// or EPERM (kernel.io_uring_disabled, seccomp) and the message says so: the
// caller falls back to open_posix_block_device.
Result<std::unique_ptr<hal::BlockDevice>> open_uring_block_device(const std::string& path,
                                                                 const hal::BlockOpenOptions& options);

// True when `error` is the kernel refusing io_uring rather than a failure.
bool uring_refused(const Error& error);

}  // namespace cxlpool::drivers
