// SPDX-License-Identifier: Apache-2.0
// The buffers of one buffer area, as their writer hands them out: a buffer
// is free until allocate() lends it to a frame, and comes back only when the
// peer returns its credit. A credit for a buffer that is not out on loan
// (misaligned, outside the area, or returned twice) is refused, so a
// hostile peer cannot make the writer reuse a buffer the peer still reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/net/descriptor.hpp"

namespace cxlpool::devpool::net {

class BufferPool {
 public:
  // An area of `area_bytes` holds ⌊area_bytes / kNetBufferBytes⌋ buffers.
  explicit BufferPool(std::uint64_t area_bytes);

  // The offset of a free buffer, now on loan; nullopt when all are out.
  std::optional<std::uint32_t> allocate();
  // Returns the buffer at `offset` before it was ever lent out (a frame that
  // was not sent after all).
  void put_back(std::uint32_t offset);
  // A credit from the peer: EBADMSG when `offset` is no buffer on loan.
  Result<void> release(std::uint32_t offset);

  std::size_t capacity() const { return on_loan_.size(); }
  std::size_t available() const { return free_.size(); }
  std::size_t outstanding() const { return capacity() - available(); }

 private:
  std::vector<std::uint32_t> free_;  // buffer indices, a stack (recently used buffers are warm)
  std::vector<bool> on_loan_;
};

}  // namespace cxlpool::devpool::net
