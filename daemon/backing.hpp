// SPDX-License-Identifier: Apache-2.0
// Wires the pool to the memory drivers compiled into this build: the file
// behind each region (emu driver) and page placement (numa driver).
#pragma once

#include <memory>

#include "cxlpool/hal/page_placement.hpp"
#include "cxlpool/hal/topology.hpp"
#include "region_pool.hpp"

namespace cxlpool::daemon {

BackingFactory make_backing_factory();

// The NUMA placement backend when compiled in and the host has NUMA support;
// null otherwise (regions are then not bound to a node).
std::unique_ptr<hal::PagePlacement> make_page_placement(const hal::Topology& topology);

}  // namespace cxlpool::daemon
