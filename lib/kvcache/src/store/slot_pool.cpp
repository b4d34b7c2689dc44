// SPDX-License-Identifier: Apache-2.0
#include "slot_pool.hpp"

namespace cxlpool::kvcache {

SlotPool::SlotPool(std::uint64_t area_bytes, std::uint64_t slot_bytes)
    : slot_bytes_(slot_bytes), capacity_(slot_bytes == 0 ? 0 : static_cast<std::size_t>(area_bytes / slot_bytes)) {
  free_.reserve(capacity_);
  for (std::size_t i = capacity_; i > 0; --i) free_.push_back(static_cast<std::uint32_t>(i - 1));
}

std::optional<std::uint64_t> SlotPool::take() {
  if (free_.empty()) return std::nullopt;
  const std::uint32_t slot = free_.back();
  free_.pop_back();
  return std::uint64_t{slot} * slot_bytes_;
}

void SlotPool::give(std::uint64_t offset) { free_.push_back(static_cast<std::uint32_t>(offset / slot_bytes_)); }

}  // namespace cxlpool::kvcache
