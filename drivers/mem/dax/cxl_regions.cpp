// SPDX-License-Identifier: Apache-2.0
#include "cxl_regions.hpp"

#include <cxl/libcxl.h>
#include <daxctl/libdaxctl.h>

#include <memory>

#include "vendor_log.hpp"

namespace cxlpool::drivers {
namespace {

// A libcxl or libdaxctl context, freed by the library's unref.
template <typename Ctx>
using LibraryCtx = std::unique_ptr<Ctx, void (*)(Ctx*)>;

// Both libraries make a context the same way: `make` (cxl_new, daxctl_new,
// named by `what` in the error), then their log goes to ours.
template <typename Ctx>
Result<LibraryCtx<Ctx>> open_library(int (*make)(Ctx**), void (*unref)(Ctx*), void (*route_log)(Ctx*),
                                     const char* what) {
  Ctx* ctx = nullptr;
  const int rc = make(&ctx);
  if (rc < 0 || ctx == nullptr) return fail(-rc, errno_message(what, -rc));
  route_log(ctx);
  return LibraryCtx<Ctx>(ctx, unref);
}

Result<LibraryCtx<cxl_ctx>> open_cxl() { return open_library(cxl_new, cxl_unref, route_cxl_log, "cxl_new"); }

Result<LibraryCtx<daxctl_ctx>> open_daxctl() {
  return open_library(daxctl_new, daxctl_unref, route_daxctl_log, "daxctl_new");
}

std::string str(const char* s) { return s != nullptr ? s : ""; }

CxlMemdevInfo memdev_info(cxl_memdev* memdev) {
  CxlMemdevInfo info;
  info.name = str(cxl_memdev_get_devname(memdev));
  info.ram_bytes = cxl_memdev_get_ram_size(memdev);
  info.pmem_bytes = cxl_memdev_get_pmem_size(memdev);
  info.numa_node = cxl_memdev_get_numa_node(memdev);
  return info;
}

CxlRegionInfo region_info(cxl_region* region) {
  CxlRegionInfo info;
  info.name = str(cxl_region_get_devname(region));
  info.size_bytes = cxl_region_get_size(region);
  info.enabled = cxl_region_is_enabled(region) > 0;
  info.mode = "none";
  bool first = true;
  cxl_memdev_mapping* mapping = nullptr;
  cxl_mapping_foreach(region, mapping) {
    cxl_decoder* endpoint = cxl_mapping_get_decoder(mapping);
    if (endpoint == nullptr) continue;
    const std::string mode = cxl_decoder_mode_name(cxl_decoder_get_mode(endpoint));
    if (first) {
      info.mode = mode;
      first = false;
    } else if (info.mode != mode) {
      info.mode = "mixed";
    }
    if (cxl_memdev* memdev = cxl_decoder_get_memdev(endpoint)) {
      info.memdevs.push_back(memdev_info(memdev));
    }
  }
  return info;
}

}  // namespace

Result<CxlInventory> discover_cxl() {
  auto ctx = open_cxl();
  if (!ctx) return tl::unexpected(ctx.error());
  CxlInventory inventory;
  cxl_memdev* memdev = nullptr;
  cxl_memdev_foreach(ctx->get(), memdev) inventory.memdevs.push_back(memdev_info(memdev));
  // Regions hang off the root decoders of each bus's root port.
  cxl_bus* bus = nullptr;
  cxl_bus_foreach(ctx->get(), bus) {
    ++inventory.buses;
    cxl_port* port = cxl_bus_get_port(bus);
    if (port == nullptr) continue;
    cxl_decoder* decoder = nullptr;
    cxl_decoder_foreach(port, decoder) {
      cxl_region* region = nullptr;
      cxl_region_foreach(decoder, region) inventory.regions.push_back(region_info(region));
    }
  }
  if (inventory.regions.empty()) return inventory;

  // A region's memory reaches the page allocator through its DAX device.
  auto dax = discover_dax_devices();
  if (!dax) return tl::unexpected(dax.error());
  for (auto& region : inventory.regions) {
    const std::string component = "/" + region.name + "/";
    for (const auto& dev : *dax) {
      if ((dev.region_path + "/").find(component) == std::string::npos) continue;
      region.dax_device = dev.name;
      region.numa_node = dev.target_node;
      break;
    }
  }
  return inventory;
}

Result<std::vector<CxlRegionInfo>> discover_cxl_regions() {
  auto inventory = discover_cxl();
  if (!inventory) return tl::unexpected(inventory.error());
  return std::move(inventory->regions);
}

Result<std::vector<DaxDeviceInfo>> discover_dax_devices() {
  auto ctx = open_daxctl();
  if (!ctx) return tl::unexpected(ctx.error());
  std::vector<DaxDeviceInfo> devices;
  daxctl_region* region = nullptr;
  daxctl_region_foreach(ctx->get(), region) {
    const std::string path = str(daxctl_region_get_path(region));
    daxctl_dev* dev = nullptr;
    daxctl_dev_foreach(region, dev) {
      DaxDeviceInfo info;
      info.name = str(daxctl_dev_get_devname(dev));
      info.region_path = path;
      info.size_bytes = daxctl_dev_get_size(dev);
      info.target_node = daxctl_dev_get_target_node(dev);
      devices.push_back(std::move(info));
    }
  }
  return devices;
}

}  // namespace cxlpool::drivers
