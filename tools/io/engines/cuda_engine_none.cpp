// SPDX-License-Identifier: Apache-2.0
// ioengine=cuda in a build without the cuda backend: ENODEV (callers skip),
// with the reason the build recorded in the backend table.
#include "cuda_engine.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::io {

Result<std::unique_ptr<Engine>> open_cuda_engine(const JobSpec&, const EngineTarget&) {
  const auto cuda = hal::probe_backend(hal::BackendClass::kGpuVmm, "cuda");
  const std::string why = cuda ? cuda->detail : "not compiled in";
  return fail(ENODEV, "cuda: engine not part of this build (" + why + ")");
}

}  // namespace cxlpool::io
