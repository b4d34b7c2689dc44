// SPDX-License-Identifier: Apache-2.0
#include "posix_probe.hpp"

namespace cxlpool::drivers {

hal::BackendReport probe_posix() {
  // pread/pwrite are in every POSIX kernel; nothing can be missing.
  return hal::BackendReport{"BlockEngine", "posix", hal::BackendState::kAvailable, "pread/pwrite"};
}

}  // namespace cxlpool::drivers
