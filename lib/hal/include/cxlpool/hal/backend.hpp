// SPDX-License-Identifier: Apache-2.0
// Backend probes. Every hardware-facing class has backends that are either not
// compiled (the build lacked the library), not present (compiled, but this
// host has no such hardware), failed (present but its set-up failed) or
// available. `cxlpoolctl backends` shows all four outcomes.
#pragma once

#include <string>
#include <vector>

namespace cxlpool::hal {

enum class BackendState { kAvailable, kNotCompiled, kNotPresent, kFailed };

struct BackendReport {
  std::string cls;   // "MemTier", "BlockEngine", "NetPort", "Transport", "GpuVmm"
  std::string name;  // "numa", "emu", "dax", "uring", "posix", "dpdk", "ofi", "verbs", "cuda", "host"
  BackendState state = BackendState::kNotPresent;
  std::string detail;  // version, device count, or why it is not available
};

const char* backend_state_name(BackendState state);

}  // namespace cxlpool::hal
