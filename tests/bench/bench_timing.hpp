// SPDX-License-Identifier: Apache-2.0
// The clock and the statistic the GPU benchmarks report their runs with.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace cxlpool::bench {

// Seconds on the monotonic clock.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The upper median: the middle run of an odd count, the later of the two
// middle ones of an even count.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace cxlpool::bench
