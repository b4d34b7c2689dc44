// SPDX-License-Identifier: Apache-2.0
// Registers the perf backend (AccessSource: PEBS/IBS memory samples through perf_event_open) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "perf_probe.hpp"

CXLPOOL_REGISTER_BACKEND(perf, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kAccessSource>, "perf", 20, &cxlpool::drivers::probe_perf_sampling,
                         {})
