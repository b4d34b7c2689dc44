// SPDX-License-Identifier: Apache-2.0
// weights_bench --target cuda's baseline. The build compiles
// weights_bench_pinned_cuda.cpp where the cuda backend is built,
// weights_bench_pinned_none.cpp elsewhere.
#pragma once

#include <cstdint>

namespace cxlpool::weights_bench {

// Seconds to copy `layers` layer-sized pieces of pinned host memory to a
// 3-slot device window, `passes` times after one warm-up pass; -1 (with a
// message) when CUDA is missing or a call fails.
double pinned_h2d_seconds(uint64_t layer_bytes, int layers, int passes);

}  // namespace cxlpool::weights_bench
