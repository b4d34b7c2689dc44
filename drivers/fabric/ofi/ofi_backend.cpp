// SPDX-License-Identifier: Apache-2.0
// Registers the ofi backend (Transport: libfabric; a probe until the Transport class exists) with lib/hal's registry.
#include "cxlpool/hal/driver/backend_driver.hpp"
#include "ofi_probe.hpp"

CXLPOOL_REGISTER_BACKEND(ofi, cxlpool::hal::ProbeOnly<cxlpool::hal::BackendClass::kTransport>, "ofi", 20, &cxlpool::drivers::probe_ofi,
                         {})
