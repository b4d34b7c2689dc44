// SPDX-License-Identifier: Apache-2.0
// Registers the verbs backend (Transport: RDMA verbs; a probe so far: the
// ofi backend reaches verbs through libfabric's verbs;ofi_rxm) with lib/hal's registry.
#include "cxlpool/hal/driver/transport_driver.hpp"
#include "verbs_probe.hpp"

CXLPOOL_REGISTER_BACKEND(verbs, cxlpool::hal::TransportOps, "verbs", 10, &cxlpool::drivers::probe_verbs,
                         (cxlpool::hal::TransportOps{nullptr}))
