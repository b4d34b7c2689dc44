// SPDX-License-Identifier: Apache-2.0
// attention_bench's GPU run in a build without the cuda backend: skipped,
// with the reason the build recorded in the backend table.
#include <cstdio>
#include <string>

#include "attention_bench.hpp"
#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::attention_bench {

int run_gpu(const Options&, const Workload&) {
  const auto cuda = hal::probe_backend(hal::BackendClass::kGpuVmm, "cuda");
  const std::string why = cuda ? cuda->detail : "not compiled in";
  std::printf("decode attention, GPU: skipped (%s)\n", why.c_str());
  return 0;
}

}  // namespace cxlpool::attention_bench
