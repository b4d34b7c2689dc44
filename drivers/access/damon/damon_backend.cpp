// SPDX-License-Identifier: Apache-2.0
// Registers the damon backend (AccessSource: DAMON's sysfs interface) with lib/hal's registry.
#include "cxlpool/hal/driver/access_source_driver.hpp"
#include "damon_probe.hpp"
#include "damon_source.hpp"

namespace cxlpool::drivers {
namespace {

// The hal options onto DAMON's own configuration; its timing and region
// limits keep their defaults.
Result<std::unique_ptr<hal::AccessSource>> open_damon(const hal::AccessSourceOptions& options) {
  DamonSourceConfig config;
  config.sysfs_root = options.sysfs_root;
  config.attach = options.attach;
  config.kdamond_index = options.kdamond_index;
  config.ranges = options.physical_ranges;
  return make_damon_source(config);
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(damon, cxlpool::hal::AccessSourceOps, "damon", 10, &cxlpool::drivers::probe_damon,
                         (cxlpool::hal::AccessSourceOps{&cxlpool::drivers::open_damon}))
