// SPDX-License-Identifier: Apache-2.0
// Run-time probe of the host GpuVmm backend (cls "GpuVmm", name "host"): the
// CPU-side equivalent of cuMemAddressReserve + cuMemMap, which any Linux
// host has.
#pragma once

#include <cstddef>

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// Granularity at which the host backend maps chunks into a reserved range.
inline constexpr size_t kHostVmmGranularity = size_t{64} << 10;

// Does the real thing once: reserves address space with mmap(PROT_NONE),
// maps a 64 KiB memfd chunk into it with MAP_FIXED|MAP_SHARED, writes
// through the mapping and reads the bytes back through the file.
// available: "mmap reserve + memfd MAP_FIXED, 64 KiB granularity";
// failed: the step that did not work, with its errno text.
hal::BackendReport probe_host_vmm();

}  // namespace cxlpool::drivers
