// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string>

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// AccessSource/damon. Read-only: opens nothing for writing and creates no
// kdamond. Available when <sysfs>/kernel/mm/damon/admin exists, its
// kdamonds/nr_kdamonds is writable by this process, and an existing context
// lists "paddr" in avail_operations. Not present, with the reason, otherwise
// (including when no context exists to read avail_operations from).
hal::BackendReport probe_damon();
// The same below another sysfs mount point (a fixture tree in tests).
hal::BackendReport probe_damon_at(const std::string& sysfs_root);

}  // namespace cxlpool::drivers
