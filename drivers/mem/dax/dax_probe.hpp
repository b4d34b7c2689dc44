// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// MemTier/dax: counts CXL buses, memdevs and regions (libcxl) and DAX devices
// (libdaxctl). Available when there is a CXL memdev or a DAX device; not
// present ("no CXL memdevs ...") otherwise; failed when a library context
// cannot be created.
hal::BackendReport probe_cxl();

}  // namespace cxlpool::drivers
