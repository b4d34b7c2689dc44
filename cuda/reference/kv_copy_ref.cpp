// SPDX-License-Identifier: Apache-2.0
#include "kv_copy_ref.hpp"

#include <cstring>

namespace cxlpool::cuda::ref {
namespace {

// Calls copy(i, page) for each listed page inside the arena; the others are
// skipped and counted. Gather and scatter differ only in the copy's direction.
template <typename Copy>
uint32_t for_each_page(uint64_t arena_pages, std::span<const uint32_t> page_index, const Copy& copy) {
  uint32_t skipped = 0;
  for (size_t i = 0; i < page_index.size(); ++i) {
    const uint64_t page = page_index[i];
    if (page >= arena_pages) {
      ++skipped;
      continue;
    }
    copy(i, page);
  }
  return skipped;
}

}  // namespace

uint32_t kv_gather(std::byte* dst, const std::byte* arena, uint64_t arena_pages,
                   std::span<const uint32_t> page_index, uint64_t page_bytes) {
  return for_each_page(arena_pages, page_index, [&](size_t i, uint64_t page) {
    std::memcpy(dst + i * page_bytes, arena + page * page_bytes, page_bytes);
  });
}

uint32_t kv_scatter(std::byte* arena, uint64_t arena_pages, const std::byte* src,
                    std::span<const uint32_t> page_index, uint64_t page_bytes) {
  return for_each_page(arena_pages, page_index, [&](size_t i, uint64_t page) {
    std::memcpy(arena + page * page_bytes, src + i * page_bytes, page_bytes);
  });
}

}  // namespace cxlpool::cuda::ref
