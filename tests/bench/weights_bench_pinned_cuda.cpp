// SPDX-License-Identifier: Apache-2.0
// weights_bench's pinned H2D baseline through the cuda backend's driver
// wrapper (built where the cuda backend is).
#include <cstdio>
#include <cstring>

#include "bench_timing.hpp"
#include "device_context.hpp"
#include "driver_api.hpp"
#include "weights_bench_pinned.hpp"

namespace cxlpool::weights_bench {

double pinned_h2d_seconds(uint64_t layer_bytes, int layers, int passes) {
  auto ctx = cuda::DeviceContext::open(0);
  if (!ctx) {
    std::fprintf(stderr, "weights_bench: %s\n", ctx.error().message.c_str());
    return -1;
  }
  const cuda::DriverApi& api = ctx->api();
  CUstream stream = nullptr;
  CUdeviceptr window = 0;
  void* pinned = nullptr;
  if (api.stream_create(&stream, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS ||
      api.mem_alloc(&window, 3 * layer_bytes) != CUDA_SUCCESS ||
      api.mem_host_alloc(&pinned, layer_bytes, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
    std::fprintf(stderr, "weights_bench: pinned baseline: allocation failed\n");
    return -1;
  }
  std::memset(pinned, 1, layer_bytes);
  double start = 0;
  bool failed = false;
  for (int p = 0; p <= passes && !failed; ++p) {
    if (p == 1) start = bench::now_s();
    for (int l = 0; l < layers && !failed; ++l) {
      failed = api.memcpy_htod_async(window + (l % 3) * layer_bytes, pinned, layer_bytes, stream) !=
                   CUDA_SUCCESS ||
               api.stream_synchronize(stream) != CUDA_SUCCESS;
    }
  }
  const double seconds = bench::now_s() - start;
  api.mem_free_host(pinned);
  api.mem_free(window);
  api.stream_destroy(stream);
  if (failed) {
    std::fprintf(stderr, "weights_bench: pinned baseline: copy failed\n");
    return -1;
  }
  return seconds;
}

}  // namespace cxlpool::weights_bench
