// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "cxlpool/hal/backend.hpp"

namespace cxlpool::drivers {

// BlockEngine/aio: sets up and tears down a one-entry native AIO context, the
// step that fails when fs.aio-max-nr is used up or AIO is compiled out.
hal::BackendReport probe_aio();

}  // namespace cxlpool::drivers
