// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// MemTier/emu: available when a memfd can be created (failed otherwise); the
// detail says whether huge pages are free for hugetlb-backed regions.
hal::BackendReport probe_emu();

}  // namespace cxlpool::drivers
