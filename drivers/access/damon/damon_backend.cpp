// SPDX-License-Identifier: Apache-2.0
// Registers the damon backend (AccessSource: DAMON's sysfs interface) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "damon_probe.hpp"

CXLPOOL_REGISTER_BACKEND(damon, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kAccessSource>, "damon", 10, &cxlpool::drivers::probe_damon,
                         {})
