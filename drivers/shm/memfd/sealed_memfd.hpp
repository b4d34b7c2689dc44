// SPDX-License-Identifier: Apache-2.0
// SharedMemory/memfd: a memfd whose size is sealed, so a peer that holds the
// descriptor cannot shrink it under another's mapping (which would turn the
// other side's next access into SIGBUS) nor grow it.
#pragma once

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/shared_memory.hpp"

namespace cxlpool::drivers {

// The seals every memfd of this backend carries, and requires of one it
// receives. Writes stay allowed: both sides of a link write.
inline constexpr int kSharedMemfdSeals = 0x0002 /* F_SEAL_SHRINK */ | 0x0004 /* F_SEAL_GROW */;

// spec.fd < 0: a new memfd of spec.size bytes (page-rounded), sealed
// against shrinking, growing and further sealing. spec.fd >= 0: maps a
// received memfd after checking that it is one and carries those seals.
// Errors as listed for "memfd" at hal::open_shared_memory.
Result<hal::SharedMemory> open_sealed_memfd(const hal::SharedMemorySpec& spec);

}  // namespace cxlpool::drivers
