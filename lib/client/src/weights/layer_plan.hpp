// SPDX-License-Identifier: Apache-2.0
// How one layer gets into a window slot: region-resident tensors are copied
// one by one; file-resident tensors are read as few aligned O_DIRECT spans
// as possible (tensors of one file that lie close together share a span),
// each tensor then at its offset inside its span.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "weights_model.hpp"

namespace cxlpool::client {

struct CopyOp {
  bool from_file = false;
  uint32_t file = 0;             // from_file: index into the model's paths
  const std::byte* src = nullptr;  // !from_file: in the region
  uint64_t file_offset = 0;      // from_file: aligned
  uint64_t bytes = 0;            // from_file: aligned length
  uint64_t dst = 0;              // offset in the slot (aligned)
};

struct LayerPlan {
  std::vector<CopyOp> ops;
  std::vector<uint64_t> tensor_dst;   // per tensor of the layer: its bytes in the slot
  std::vector<uint32_t> tensor_index; // model tensor indices
  uint64_t slot_bytes = 0;            // what the slot must hold
  uint64_t payload_bytes = 0;         // tensor bytes
  uint64_t region_bytes = 0;          // of which copied from the region
  uint64_t file_bytes = 0;            // bytes read from files (aligned spans)
};

// `align`: O_DIRECT offset/length/memory alignment (a power of two >= 512).
// Tensors of one file whose gap is below `merge_gap` share a span.
LayerPlan plan_layer(const WeightsModel& model, size_t layer, uint64_t align, uint64_t merge_gap = 1 << 16);

}  // namespace cxlpool::client
