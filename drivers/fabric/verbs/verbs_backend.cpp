// SPDX-License-Identifier: Apache-2.0
// Registers the verbs backend (Transport: RDMA verbs; a probe until the Transport class exists) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "verbs_probe.hpp"

CXLPOOL_REGISTER_BACKEND(verbs, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kTransport>, "verbs", 10, &cxlpool::drivers::probe_verbs,
                         {})
