// SPDX-License-Identifier: Apache-2.0
#include "io_buffers.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace cxlpool::io {

Result<void> IoBuffers::allocate(std::uint32_t count, std::size_t bytes, std::size_t alignment) {
  if (count == 0 || bytes == 0) return fail(EINVAL, "I/O buffers: none asked for");
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t align = std::max(alignment, page);
  stride_ = (bytes + align - 1) / align * align;
  auto map = Mapping::map(stride_ * count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1);
  if (!map) return tl::unexpected(map.error());
  mapping_ = std::move(*map);
  pointers_.resize(count);
  for (std::uint32_t i = 0; i < count; ++i) pointers_[i] = mapping_.data() + std::size_t{i} * stride_;
  return {};
}

}  // namespace cxlpool::io
