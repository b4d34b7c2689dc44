// SPDX-License-Identifier: Apache-2.0
// Fixed-size slots of one memory area (an arena or a client's put window),
// handed out by offset. A stack of free slot numbers: take and give are O(1)
// and allocate nothing after construction, which keeps the request path free
// of allocator calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace cxlpool::kvcache {

class SlotPool {
 public:
  SlotPool() = default;
  // floor(area_bytes / slot_bytes) slots; slot_bytes > 0.
  SlotPool(std::uint64_t area_bytes, std::uint64_t slot_bytes);

  // The offset of a free slot (lowest offsets first, for locality), or nullopt.
  std::optional<std::uint64_t> take();
  // Returns a slot taken earlier (offset as take() gave it).
  void give(std::uint64_t offset);

  [[nodiscard]] std::size_t capacity() const { return capacity_; }
  [[nodiscard]] std::size_t free_count() const { return free_.size(); }
  [[nodiscard]] std::size_t used_count() const { return capacity_ - free_.size(); }
  [[nodiscard]] std::uint64_t slot_bytes() const { return slot_bytes_; }

 private:
  std::uint64_t slot_bytes_ = 0;
  std::size_t capacity_ = 0;
  std::vector<std::uint32_t> free_;  // slot numbers; back() is taken next
};

}  // namespace cxlpool::kvcache
