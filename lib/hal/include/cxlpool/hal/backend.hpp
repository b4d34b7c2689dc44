// SPDX-License-Identifier: Apache-2.0
// Backend classes and probe reports. Every hardware-facing class has
// backends that are either not compiled (the build lacked the library), not
// present (compiled, but this host has no such hardware, or the
// CXLPOOL_BACKENDS filter excludes it), failed (present but its set-up
// failed) or available. `cxlpoolctl backends` shows all four outcomes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cxlpool::hal {

// The interfaces a backend implements. Reports carry the class's name.
// SharedMemory: the memory device links live in (drivers/shm).
enum class BackendClass : std::uint8_t {
  kMemTier,
  kBlockEngine,
  kNetPort,
  kTransport,
  kGpuVmm,
  kAccessSource,
  kSharedMemory,
};
inline constexpr int kBackendClassCount = 7;

// "MemTier", "BlockEngine", "NetPort", "Transport", "GpuVmm", "AccessSource",
// "SharedMemory".
const char* backend_class_name(BackendClass cls);

enum class BackendState { kAvailable, kNotCompiled, kNotPresent, kFailed };

struct BackendReport {
  std::string cls;   // backend_class_name()
  std::string name;  // "numa", "emu", "dax", "uring", "posix", "dpdk", "ofi", "verbs", "cuda", "host", ...
  BackendState state = BackendState::kNotPresent;
  std::string detail;  // version, device count, or why it is not available
};

const char* backend_state_name(BackendState state);

}  // namespace cxlpool::hal
