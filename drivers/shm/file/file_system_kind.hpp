// SPDX-License-Identifier: Apache-2.0
// Which file system an open file lives on, as far as a shared mapping cares.
#pragma once

#include <cstdint>
#include <string>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers {

struct FileSystemKind {
  std::string name;             // "tmpfs", "hugetlbfs", "ext4", ... or "fs 0x<magic>"
  bool hugetlbfs = false;
  std::uint64_t page_size = 0;  // huge page size on hugetlbfs, the base page size elsewhere
};

// fstatfs(fd). Errors: the errno of fstatfs.
Result<FileSystemKind> file_system_of(int fd);

}  // namespace cxlpool::drivers
