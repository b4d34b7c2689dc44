// SPDX-License-Identifier: Apache-2.0
// A device's load as its backend reports it every telemetry period (100 ms
// by default): the last samples, and an exponentially weighted average the
// allocator balances on. Utilization is relative to the device's capacity
// (a NIC's link speed, an SSD's nominal bandwidth or IOPS, whichever is the
// larger share), so devices of different sizes compare.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "cxlpool/devpool/pod_state.hpp"

namespace cxlpool::devpool {

struct LoadSample {
  uint64_t at_ns = 0;
  uint64_t bytes_per_s = 0;  // both directions
  uint64_t ops_per_s = 0;    // packets or I/O commands
  bool link_up = true;       // net: the port's link; blk: always true
};

// Share of `spec`'s capacity `sample` uses; 0 where the capacity is unknown.
double utilization(const DeviceSpec& spec, const LoadSample& sample);
// A utilization in parts per million, capped at 4000 (400000 %) so that it
// fits 32 bits.
uint32_t utilization_ppm(double share);
inline constexpr uint32_t kMaxUtilizationPpm = 4'000'000'000u;

class DeviceLoad {
 public:
  static constexpr size_t kHistory = 32;  // 3.2 s at 100 ms
  static constexpr double kAlpha = 0.3;   // weight of the newest sample

  void add(const DeviceSpec& spec, const LoadSample& sample);

  double ewma() const { return ewma_; }
  size_t samples() const { return count_ < kHistory ? count_ : kHistory; }
  uint64_t total_samples() const { return count_; }
  // The i-th most recent sample (0: the newest); i < samples().
  const LoadSample& recent(size_t i) const { return history_[(count_ - 1 - i) % kHistory]; }
  double recent_utilization(size_t i) const { return utilization_[(count_ - 1 - i) % kHistory]; }

 private:
  std::array<LoadSample, kHistory> history_{};
  std::array<double, kHistory> utilization_{};
  uint64_t count_ = 0;
  double ewma_ = 0.0;
};

}  // namespace cxlpool::devpool
