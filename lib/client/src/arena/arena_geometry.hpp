// SPDX-License-Identifier: Apache-2.0
// The arena's shape, derived once from its config: how big a token, a row
// and a tensor are, and where a (tensor, row, page) lives in the
// reservation. Every K/V tensor of every layer is one "sub-tensor" of the
// reservation, in the order layer, K/V, so the fused layout is the same
// memory with one base address.
#pragma once

#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kv_arena.h"

namespace cxlpool::client::arena {

inline constexpr uint64_t kDefaultPageBytes = uint64_t{2} << 20;
inline constexpr uint64_t kDefaultRegionBytes = uint64_t{64} << 20;

struct ArenaGeometry {
  uint32_t layers = 0;
  uint32_t kv_heads = 0;
  uint32_t head_dim = 0;
  uint32_t dtype_bytes = 0;
  uint32_t max_batch = 0;
  uint32_t max_context = 0;
  uint32_t tensors = 0;          // 2 * layers
  uint64_t token_bytes = 0;      // kv_heads * head_dim * dtype_bytes
  uint64_t page_bytes = 0;
  uint64_t row_stride = 0;       // max_context tokens, rounded up to a page
  uint64_t tensor_bytes = 0;     // max_batch * row_stride
  uint64_t total_bytes = 0;      // tensors * tensor_bytes
  uint32_t pages_per_row = 0;    // row_stride / page_bytes
  uint64_t region_bytes = 0;     // daemon memory per allocation, a page multiple
  uint32_t lookahead_tokens = 0; // what step_async maps ahead: one page's worth

  // Pages one tensor's row needs to hold `tokens` tokens.
  uint32_t pages_for(uint32_t tokens) const {
    return static_cast<uint32_t>((uint64_t{tokens} * token_bytes + page_bytes - 1) / page_bytes);
  }
  // Byte offset of page `page` of row `row` in tensor `tensor`.
  uint64_t page_offset(uint32_t tensor, uint32_t row, uint32_t page) const {
    return uint64_t{tensor} * tensor_bytes + uint64_t{row} * row_stride + uint64_t{page} * page_bytes;
  }
  uint64_t tensor_offset(uint32_t layer, uint32_t kind) const {
    return (uint64_t{layer} * 2 + kind) * tensor_bytes;
  }
  // Bytes of one store chunk: chunk_tokens tokens of every layer's K and V.
  uint64_t chunk_bytes(uint32_t chunk_tokens) const {
    return uint64_t{chunk_tokens} * token_bytes * tensors;
  }
};

// Validates `config` (EINVAL with the field named) and fills defaults:
// page_bytes 0 = 2 MiB; region_bytes 0 = 64 MiB, rounded up to a page
// multiple. page_bytes must be a power of two and a multiple of the
// backend's `granularity`.
Result<ArenaGeometry> make_geometry(const cxlpool_kv_arena_config& config, uint64_t granularity);

}  // namespace cxlpool::client::arena
