// SPDX-License-Identifier: Apache-2.0
#include "mmap_probe.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_mmap() {
  // mmap of a regular file is in every Linux kernel; nothing can be missing.
  return {"BlockEngine", "mmap", hal::BackendState::kAvailable, "page-cache faults through MAP_SHARED"};
}

}  // namespace cxlpool::drivers
