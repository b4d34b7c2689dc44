// SPDX-License-Identifier: Apache-2.0
// Registers the file backend (SharedMemory: a file by path) with lib/hal's registry.
#include <fcntl.h>

#include "cxlpool/common/unique_fd.hpp"
#include "cxlpool/hal/driver/shared_memory_driver.hpp"
#include "file_system_kind.hpp"
#include "shared_file.hpp"

namespace cxlpool::drivers {
namespace {

// Always available (any writable path will do); the detail says whether
// /dev/shm, where regions usually go, is the tmpfs it should be.
hal::BackendReport probe_shared_file() {
  hal::BackendReport report{"SharedMemory", "file", hal::BackendState::kAvailable, ""};
  UniqueFd dir(::open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) {
    report.detail = "any file by path; no /dev/shm";
    return report;
  }
  auto fs = file_system_of(dir.get());
  report.detail = "any file by path; /dev/shm is " + (fs ? fs->name : fs.error().message);
  return report;
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(file, cxlpool::hal::SharedMemoryOps, "file", 20, &cxlpool::drivers::probe_shared_file,
                         (cxlpool::hal::SharedMemoryOps{&cxlpool::drivers::open_shared_file}))
