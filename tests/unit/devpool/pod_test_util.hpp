// SPDX-License-Identifier: Apache-2.0
// A pod for allocator tests: an embedded state, an allocator over it and a
// clock the test advances.
#pragma once

#include <string>

#include "cxlpool/devpool/pod_allocator.hpp"

namespace cxlpool::devpool::test {

inline constexpr uint64_t kMs = 1'000'000;
inline constexpr uint64_t k10G = 10'000'000'000;

struct Pod {
  explicit Pod(AllocatorConfig config = {}) : allocator(state, config) {}

  uint32_t add_nic(const std::string& name, const std::string& host, uint64_t bps = k10G, uint64_t owner = 1) {
    auto out = allocator.register_device({DeviceKind::kNet, name, host, bps, 0, 0, {}}, owner, now);
    return out.status == RegisterStatus::kRegistered ? out.device : kNoDevice;
  }
  uint32_t add_ssd(const std::string& name, const std::string& host, uint64_t bandwidth = 1'000'000'000) {
    auto out = allocator.register_device({DeviceKind::kBlk, name, host, 1ull << 40, 100'000, bandwidth, {}}, 1, now);
    return out.status == RegisterStatus::kRegistered ? out.device : kNoDevice;
  }
  AttachOutcome attach(const std::string& host, DeviceKind kind = DeviceKind::kNet, const std::string& preferred = "") {
    return allocator.attach({host, kind, preferred, ""}, 99, now);
  }
  // A heartbeat reporting `fraction` of a 10 Gbit/s link in use.
  HeartbeatOutcome beat(uint32_t device, double fraction = 0.0, bool link_up = true) {
    const auto bytes = static_cast<uint64_t>(fraction * static_cast<double>(k10G) / 8.0);
    return allocator.heartbeat(device, {0, bytes, 0, link_up}, now);
  }
  Attachment get(uint32_t attachment) const { return *state.attachment(attachment); }

  EmbeddedPodState state;
  PodAllocator allocator;
  uint64_t now = 1000 * kMs;
};

}  // namespace cxlpool::devpool::test
