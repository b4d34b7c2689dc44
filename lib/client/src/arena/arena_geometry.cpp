// SPDX-License-Identifier: Apache-2.0
#include "arena_geometry.hpp"

#include <string>

namespace cxlpool::client::arena {
namespace {

// Above this the address space of one process (47 bits) is at risk.
constexpr uint64_t kMaxReservation = uint64_t{1} << 45;

bool power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

Result<ArenaGeometry> make_geometry(const cxlpool_kv_arena_config& c, uint64_t granularity) {
  if (c.layers == 0 || c.kv_heads == 0 || c.head_dim == 0) {
    return fail(EINVAL, "kv arena: layers, kv_heads and head_dim must be at least 1");
  }
  if (c.dtype_bytes != 1 && c.dtype_bytes != 2 && c.dtype_bytes != 4) {
    return fail(EINVAL, "kv arena: dtype_bytes must be 1, 2 or 4");
  }
  if (c.max_batch == 0 || c.max_context == 0) {
    return fail(EINVAL, "kv arena: max_batch and max_context must be at least 1");
  }
  if (c.layout > CXLPOOL_ARENA_LAYOUT_FUSED) return fail(EINVAL, "kv arena: unknown layout");
  if (c.backend > CXLPOOL_ARENA_BACKEND_CUDA) return fail(EINVAL, "kv arena: unknown backend");
  if (c.layers > (1u << 16) || c.kv_heads > (1u << 16) || c.head_dim > (1u << 16)) {
    return fail(EINVAL, "kv arena: layers, kv_heads and head_dim must be at most 65536");
  }
  ArenaGeometry g;
  g.layers = c.layers;
  g.kv_heads = c.kv_heads;
  g.head_dim = c.head_dim;
  g.dtype_bytes = c.dtype_bytes;
  g.max_batch = c.max_batch;
  g.max_context = c.max_context;
  g.tensors = 2 * c.layers;
  g.token_bytes = uint64_t{c.kv_heads} * c.head_dim * c.dtype_bytes;
  g.page_bytes = c.page_bytes == 0 ? kDefaultPageBytes : c.page_bytes;
  if (!power_of_two(g.page_bytes)) return fail(EINVAL, "kv arena: page_bytes must be a power of two");
  if (granularity == 0 || g.page_bytes % granularity != 0) {
    return fail(EINVAL, "kv arena: page_bytes " + std::to_string(g.page_bytes) +
                            " is not a multiple of the backend's granularity " + std::to_string(granularity));
  }
  const uint64_t row = uint64_t{c.max_context} * g.token_bytes;
  g.row_stride = (row + g.page_bytes - 1) / g.page_bytes * g.page_bytes;
  g.pages_per_row = static_cast<uint32_t>(g.row_stride / g.page_bytes);
  // Checked in steps so that no product overflows 64 bits.
  if (g.row_stride > kMaxReservation / c.max_batch) return fail(EINVAL, "kv arena: tensors too large to reserve");
  g.tensor_bytes = g.row_stride * c.max_batch;
  if (g.tensor_bytes > kMaxReservation / g.tensors) return fail(EINVAL, "kv arena: tensors too large to reserve");
  g.total_bytes = g.tensor_bytes * g.tensors;
  const uint64_t region = c.region_bytes == 0 ? kDefaultRegionBytes : c.region_bytes;
  g.region_bytes = (region + g.page_bytes - 1) / g.page_bytes * g.page_bytes;
  const uint64_t per_page = g.page_bytes / g.token_bytes;
  g.lookahead_tokens = static_cast<uint32_t>(per_page == 0 ? 1 : per_page > c.max_context ? c.max_context : per_page);
  return g;
}

}  // namespace cxlpool::client::arena
