// SPDX-License-Identifier: Apache-2.0
// Wires the pool to the memory drivers: the file behind each region (emu
// driver, always built) and page placement (through the backend registry:
// the numa driver where it is linked in and allowed).
#pragma once

#include <memory>

#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/hal/topology.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {

BackingFactory make_backing_factory();

// The registry's page placement when the host has NUMA nodes and a MemTier
// backend that places pages can run (numa); null otherwise (regions are
// then not bound to a node).
std::unique_ptr<hal::PagePlacement> make_page_placement(const hal::Topology& topology);

}  // namespace cxlpool::daemon
