// SPDX-License-Identifier: Apache-2.0
// hal::open_shared_memory: the one place that chooses a SharedMemory backend.
#include "backend_select.hpp"
#include "cxlpool/hal/driver/shared_memory_driver.hpp"

namespace cxlpool::hal {
namespace {

// ENODEV means "not a spec for me"; anything else is about the file or
// device the caller named, which no other backend would open better.
bool spec_belongs_elsewhere(const BackendDescriptor&, const Error& error) { return error.code == ENODEV; }

}  // namespace

Result<SharedMemory> open_shared_memory(std::string_view backend, const SharedMemorySpec& spec,
                                        BackendSkips* skipped) {
  return open_backend<SharedMemory>(
      BackendClass::kSharedMemory, backend, skipped,
      [&](const BackendDescriptor& d) {
        return call_operation<SharedMemoryOps, &SharedMemoryOps::open>(d, "no SharedMemory implementation", spec);
      },
      spec_belongs_elsewhere);
}

}  // namespace cxlpool::hal
