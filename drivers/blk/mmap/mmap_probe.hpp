// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// BlockEngine/mmap: copies through a shared file mapping; always available.
hal::BackendReport probe_mmap();

}  // namespace cxlpool::drivers
