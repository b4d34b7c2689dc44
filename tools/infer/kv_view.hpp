// SPDX-License-Identifier: Apache-2.0
// Where one layer's K and V live: tensors laid out [row][token][kv_head][dim]
// (f32) with byte strides, as a KV arena hands them out. The reference path
// points this at plain vectors, the runtime path at the arena.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cxlpool::infer {

struct KvLayerView {
  std::byte* k = nullptr;
  std::byte* v = nullptr;
  uint64_t row_stride = 0;
  uint64_t token_stride = 0;

  float* k_at(uint32_t row, uint32_t token) const {
    return reinterpret_cast<float*>(k + row * row_stride + token * token_stride);
  }
  float* v_at(uint32_t row, uint32_t token) const {
    return reinterpret_cast<float*>(v + row * row_stride + token * token_stride);
  }
};

class KvCache {
 public:
  virtual ~KvCache() = default;
  virtual KvLayerView layer(uint32_t layer) const = 0;
};

}  // namespace cxlpool::infer
