// SPDX-License-Identifier: Apache-2.0
#include "duration_histogram.hpp"

#include <algorithm>

namespace cxlpool::daemon {

void DurationHistogram::record(std::uint64_t ns) {
  const auto it = std::lower_bound(kBoundsNs.begin(), kBoundsNs.end(), ns);
  if (it != kBoundsNs.end()) ++in_bucket_[static_cast<std::size_t>(it - kBoundsNs.begin())];
  ++count_;
  sum_ns_ += ns;
}

std::uint64_t DurationHistogram::cumulative(std::size_t i) const {
  std::uint64_t total = 0;
  for (std::size_t b = 0; b <= i && b < in_bucket_.size(); ++b) total += in_bucket_[b];
  return total;
}

}  // namespace cxlpool::daemon
