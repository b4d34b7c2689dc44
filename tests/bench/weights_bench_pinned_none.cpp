// SPDX-License-Identifier: Apache-2.0
// weights_bench's pinned H2D baseline in a build without the cuda backend.
#include <cstdio>

#include "weights_bench_pinned.hpp"

namespace cxlpool::weights_bench {

double pinned_h2d_seconds(uint64_t, int, int) {
  std::fprintf(stderr, "weights_bench: built without CUDA\n");
  return -1;
}

}  // namespace cxlpool::weights_bench
