// SPDX-License-Identifier: Apache-2.0
// CPU reference of the kv_gather / kv_scatter kernels (kernels/kv_copy.cu).
// A KV arena is an array of equally sized pages; a page list names which arena
// pages a request touches. Gather packs those pages into a contiguous buffer,
// scatter writes a contiguous buffer back into them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace cxlpool::cuda::ref {

// dst[i * page_bytes, +page_bytes) = arena[page_index[i] * page_bytes, +page_bytes).
// An index >= arena_pages is skipped (its destination page is left untouched)
// and counted. Returns the number of skipped pages.
uint32_t kv_gather(std::byte* dst, const std::byte* arena, uint64_t arena_pages,
                   std::span<const uint32_t> page_index, uint64_t page_bytes);

// arena[page_index[i] * page_bytes, +page_bytes) = src[i * page_bytes, +page_bytes).
// Out-of-range indices are skipped and counted as in kv_gather. When an index
// repeats, the page ends up holding one of the sources; which one is
// unspecified (the GPU kernel copies pages in parallel).
uint32_t kv_scatter(std::byte* arena, uint64_t arena_pages, const std::byte* src,
                    std::span<const uint32_t> page_index, uint64_t page_bytes);

}  // namespace cxlpool::cuda::ref
