// SPDX-License-Identifier: Apache-2.0
// Registers the memfd backend (SharedMemory: sealed memfds) with lib/hal's registry.
#include <fcntl.h>
#include <sys/mman.h>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/shared_memory_driver.hpp"
#include "sealed_memfd.hpp"

namespace cxlpool::drivers {
namespace {

// A kernel without memfd sealing (or a seccomp filter) would make every
// open fail: try both once.
hal::BackendReport probe_sealed_memfd() {
  hal::BackendReport report{"SharedMemory", "memfd", hal::BackendState::kAvailable, "sealed memfd"};
  UniqueFd fd(::memfd_create("cxlpool-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) {
    report.state = hal::BackendState::kFailed;
    report.detail = errno_message("memfd_create", errno);
  } else if (::fcntl(fd.get(), F_ADD_SEALS, kSharedMemfdSeals) != 0) {
    report.state = hal::BackendState::kFailed;
    report.detail = errno_message("F_ADD_SEALS", errno);
  }
  return report;
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(memfd, cxlpool::hal::SharedMemoryOps, "memfd", 30, &cxlpool::drivers::probe_sealed_memfd,
                         (cxlpool::hal::SharedMemoryOps{&cxlpool::drivers::open_sealed_memfd}))
