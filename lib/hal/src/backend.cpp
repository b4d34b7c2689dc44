// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/backend.hpp"

#include <iterator>

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::hal {

namespace {

constexpr EnumName<BackendClass> kBackendClassNames[] = {
    {BackendClass::kMemTier, "MemTier"},
    {BackendClass::kBlockEngine, "BlockEngine"},
    {BackendClass::kNetPort, "NetPort"},
    {BackendClass::kTransport, "Transport"},
    {BackendClass::kGpuVmm, "GpuVmm"},
    {BackendClass::kAccessSource, "AccessSource"},
    {BackendClass::kSharedMemory, "SharedMemory"},
};
static_assert(std::size(kBackendClassNames) == kBackendClassCount);

constexpr EnumName<BackendState> kBackendStateNames[] = {
    {BackendState::kAvailable, "available"},
    {BackendState::kNotCompiled, "not compiled"},
    {BackendState::kNotPresent, "not present"},
    {BackendState::kFailed, "failed"},
};

}  // namespace

const char* backend_class_name(BackendClass cls) { return enum_name(kBackendClassNames, cls, "unknown"); }

const char* backend_state_name(BackendState state) { return enum_name(kBackendStateNames, state, "unknown"); }

}  // namespace cxlpool::hal
