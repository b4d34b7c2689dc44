// SPDX-License-Identifier: Apache-2.0
// Registers the perf backend (AccessSource: PEBS/IBS memory samples through perf_event_open) with lib/hal's registry.
#include "cxlpool/hal/driver/access_source_driver.hpp"
#include "perf_probe.hpp"
#include "perf_source.hpp"

namespace cxlpool::drivers {
namespace {

// The hal options onto perf's own configuration: system-wide sampling with
// the driver's default PMU choice, period and ring size.
Result<std::unique_ptr<hal::AccessSource>> open_perf(const hal::AccessSourceOptions& options) {
  PerfSamplingConfig config;
  config.sysfs_root = options.sysfs_root;
  config.procfs_root = options.procfs_root;
  return make_perf_sampling_source(config);
}

}  // namespace
}  // namespace cxlpool::drivers

CXLPOOL_REGISTER_BACKEND(perf, cxlpool::hal::AccessSourceOps, "perf", 20, &cxlpool::drivers::probe_perf_sampling,
                         (cxlpool::hal::AccessSourceOps{&cxlpool::drivers::open_perf}))
