// SPDX-License-Identifier: Apache-2.0
// CXL memory devices and regions, and the DAX devices that expose them, so the
// daemon can show (and use) CXL regions as tiers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::drivers {

struct CxlMemdevInfo {
  std::string name;         // "mem0"
  uint64_t ram_bytes = 0;   // volatile capacity
  uint64_t pmem_bytes = 0;  // persistent capacity
  int numa_node = -1;       // of the device's host bridge; -1 if unknown
};

struct CxlRegionInfo {
  std::string name;                     // "region0"
  uint64_t size_bytes = 0;
  std::string mode;                     // "ram", "pmem", "mixed" or "none" (from its endpoint decoders)
  bool enabled = false;
  std::vector<CxlMemdevInfo> memdevs;   // interleave targets in position order
  std::string dax_device;               // "dax0.0" when the region has one
  int numa_node = -1;                   // the DAX device's target node (system-ram onlining); -1 if none
};

struct DaxDeviceInfo {
  std::string name;         // "dax0.0"
  std::string region_path;  // sysfs path of its DAX region
  uint64_t size_bytes = 0;
  int target_node = -1;     // NUMA node its memory joins when onlined as system RAM
};

struct CxlInventory {
  int buses = 0;
  std::vector<CxlMemdevInfo> memdevs;
  std::vector<CxlRegionInfo> regions;
};

// Every CXL bus, memdev and region. Empty (not an error) on a host without
// CXL. Errors: the errno of cxl_new/daxctl_new.
Result<CxlInventory> discover_cxl();
Result<std::vector<CxlRegionInfo>> discover_cxl_regions();

// Every DAX device (CXL-backed or not). Errors: the errno of daxctl_new.
Result<std::vector<DaxDeviceInfo>> discover_dax_devices();

}  // namespace cxlpool::drivers
