// SPDX-License-Identifier: Apache-2.0
// Whether a host range of this process is writable, from /proc/self/maps.
// cuMemHostRegister refuses a read-only mapping (CUDA_ERROR_INVALID_VALUE)
// unless CU_MEMHOSTREGISTER_READ_ONLY is passed, and that flag on a
// writable mapping would make device writes fault: the registration needs
// the mapping's real protection, which only the kernel knows.
#pragma once

#include <cstddef>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::cuda {

enum class HostProtection { kReadWrite, kReadOnly };

// The protection of [host, host + bytes): kReadOnly when any page of it
// lacks write permission. Errors: EINVAL for an empty range; EFAULT when a
// page of it is not mapped (or not readable); the open/read failure of
// /proc/self/maps.
Result<HostProtection> host_range_protection(const void* host, std::size_t bytes);

// The same question over a maps text (the format of /proc/<pid>/maps), for
// tests.
Result<HostProtection> host_range_protection_in(std::string_view maps, const void* host,
                                                std::size_t bytes);

}  // namespace cxlpool::cuda
