// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/device_load.hpp"

#include <algorithm>

namespace cxlpool::devpool {

double utilization(const DeviceSpec& spec, const LoadSample& sample) {
  if (spec.kind == DeviceKind::kNet) {
    if (spec.capacity == 0) return 0.0;
    return static_cast<double>(sample.bytes_per_s) * 8.0 / static_cast<double>(spec.capacity);
  }
  // An SSD is busy by bandwidth or by IOPS, whichever it is closer to.
  double share = 0.0;
  if (spec.bandwidth_bps != 0) {
    share = static_cast<double>(sample.bytes_per_s) / static_cast<double>(spec.bandwidth_bps);
  }
  if (spec.iops != 0) {
    share = std::max(share, static_cast<double>(sample.ops_per_s) / static_cast<double>(spec.iops));
  }
  return share;
}

uint32_t utilization_ppm(double share) {
  if (!(share > 0.0)) return 0;
  return static_cast<uint32_t>(std::min(share, 4000.0) * 1e6);
}

void DeviceLoad::add(const DeviceSpec& spec, const LoadSample& sample) {
  const double u = utilization(spec, sample);
  const size_t at = count_ % kHistory;
  history_[at] = sample;
  utilization_[at] = u;
  ewma_ = count_ == 0 ? u : kAlpha * u + (1.0 - kAlpha) * ewma_;
  ++count_;
}

}  // namespace cxlpool::devpool
