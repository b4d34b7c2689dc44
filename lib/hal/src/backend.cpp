// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/backend.hpp"

namespace cxlpool::hal {

const char* backend_class_name(BackendClass cls) {
  switch (cls) {
    case BackendClass::kMemTier: return "MemTier";
    case BackendClass::kBlockEngine: return "BlockEngine";
    case BackendClass::kNetPort: return "NetPort";
    case BackendClass::kTransport: return "Transport";
    case BackendClass::kGpuVmm: return "GpuVmm";
    case BackendClass::kAccessSource: return "AccessSource";
  }
  return "unknown";
}

const char* backend_state_name(BackendState state) {
  switch (state) {
    case BackendState::kAvailable: return "available";
    case BackendState::kNotCompiled: return "not compiled";
    case BackendState::kNotPresent: return "not present";
    case BackendState::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace cxlpool::hal
