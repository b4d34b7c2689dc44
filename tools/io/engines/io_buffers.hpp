// SPDX-License-Identifier: Apache-2.0
// I/O buffers for an engine: one anonymous mapping split into `count`
// buffers, each aligned for direct I/O and to a page (so registering them
// with io_uring pins whole pages of ours only).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "cxlpool/common/mapping.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::io {

class IoBuffers {
 public:
  Result<void> allocate(std::uint32_t count, std::size_t bytes, std::size_t alignment);
  std::span<std::byte*> pointers() { return pointers_; }
  std::size_t stride() const { return stride_; }

 private:
  Mapping mapping_;
  std::vector<std::byte*> pointers_;
  std::size_t stride_ = 0;
};

}  // namespace cxlpool::io
