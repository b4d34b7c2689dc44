// SPDX-License-Identifier: Apache-2.0
// Registers the ofi backend (Transport: libfabric) with lib/hal's registry.
#include "cxlpool/hal/driver/transport_driver.hpp"
#include "ofi_probe.hpp"
#include "ofi_transport.hpp"

CXLPOOL_REGISTER_BACKEND(ofi, cxlpool::hal::TransportOps, "ofi", 20, &cxlpool::drivers::probe_ofi,
                         (cxlpool::hal::TransportOps{&cxlpool::drivers::ofi::open_transport}))
