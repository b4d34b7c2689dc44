// SPDX-License-Identifier: Apache-2.0
// SharedMemory/file: create or open a file by path and map all of it shared.
#pragma once

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/shared_memory.hpp"

namespace cxlpool::drivers {

// Opens spec.path (O_RDWR | O_CLOEXEC | O_NOFOLLOW), creating it with mode
// 0600 when missing and spec.create, and maps spec.size bytes (all of it
// when 0) MAP_SHARED. A new or empty file is sized to spec.size (rounded up
// to the huge page size on hugetlbfs, whose pages are reserved by the size
// change, so a mapping never faults for lack of them). Errors as listed for
// "file" at hal::open_shared_memory.
Result<hal::SharedMemory> open_shared_file(const hal::SharedMemorySpec& spec);

}  // namespace cxlpool::drivers
