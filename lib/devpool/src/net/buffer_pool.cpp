// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/net/buffer_pool.hpp"

#include <algorithm>
#include <string>

namespace cxlpool::devpool::net {

BufferPool::BufferPool(std::uint64_t area_bytes) {
  // Offsets are u32 in a descriptor: buffers beyond 4 GiB are never used.
  const std::uint64_t usable = std::min<std::uint64_t>(area_bytes, std::uint64_t{1} << 32);
  const auto count = static_cast<std::uint32_t>(usable / kNetBufferBytes);
  on_loan_.assign(count, false);
  free_.reserve(count);
  for (std::uint32_t i = count; i > 0; --i) free_.push_back(i - 1);
}

std::optional<std::uint32_t> BufferPool::allocate() {
  if (free_.empty()) return std::nullopt;
  const std::uint32_t index = free_.back();
  free_.pop_back();
  on_loan_[index] = true;
  return index * kNetBufferBytes;
}

void BufferPool::put_back(std::uint32_t offset) {
  const std::uint32_t index = offset / kNetBufferBytes;
  on_loan_[index] = false;
  free_.push_back(index);
}

Result<void> BufferPool::release(std::uint32_t offset) {
  const std::uint32_t index = offset / kNetBufferBytes;
  if (offset % kNetBufferBytes != 0 || index >= on_loan_.size() || !on_loan_[index]) {
    return fail(EBADMSG, "net credit for offset " + std::to_string(offset) + ": no buffer on loan there");
  }
  on_loan_[index] = false;
  free_.push_back(index);
  return {};
}

}  // namespace cxlpool::devpool::net
