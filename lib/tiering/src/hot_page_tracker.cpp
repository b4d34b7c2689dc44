// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/hot_page_tracker.hpp"

#include <string>
#include <utility>

namespace cxlpool::tiering {

Result<HotPageTracker> HotPageTracker::create(const HotPageTrackerConfig& config) {
  if (config.top_k < 1 || config.top_k > kMaxTopK) {
    return fail(EINVAL, "hot-page tracker: top_k " + std::to_string(config.top_k) + " not in 1.." +
                            std::to_string(kMaxTopK));
  }
  auto sketch = CountMinSketch::create(config.sketch);
  if (!sketch) return tl::unexpected(sketch.error());
  return HotPageTracker(std::move(*sketch), config.top_k);
}

std::vector<HotPage> HotPageTracker::end_epoch() {
  std::vector<HotPage> out = top_.sorted();
  sketch_.reset();
  top_.clear();
  return out;
}

std::size_t HotPageTracker::memory_bytes() const {
  // Heap entries plus a rough per-node cost of the index.
  return sketch_.memory_bytes() + top_.capacity() * (sizeof(KeyCount) + 4 * sizeof(void*));
}

}  // namespace cxlpool::tiering
