// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/driver/transfer_plan.hpp"

#include <algorithm>

namespace cxlpool::hal {

std::vector<ChunkPlan> plan_chunks(std::span<const std::uint64_t> lengths, std::uint32_t chunk_bytes,
                                   std::span<const std::uint32_t> rails) {
  std::vector<ChunkPlan> plan;
  if (rails.empty() || chunk_bytes == 0) return plan;
  std::vector<std::uint64_t> given(rails.size(), 0);
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    for (std::uint64_t offset = 0; offset < lengths[r]; offset += chunk_bytes) {
      const auto length = static_cast<std::uint32_t>(std::min<std::uint64_t>(chunk_bytes, lengths[r] - offset));
      const auto least = static_cast<std::size_t>(std::min_element(given.begin(), given.end()) - given.begin());
      given[least] += length;
      plan.push_back({r, offset, length, rails[least]});
    }
  }
  return plan;
}

}  // namespace cxlpool::hal
