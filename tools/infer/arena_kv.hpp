// SPDX-License-Identifier: Apache-2.0
// The decoder's KV cache inside a cxlpool KV arena: the arena's per-layer K
// and V tensors, indexed directly (their layout is the decoder's own).
#pragma once

#include <vector>

#include "client_handles.hpp"
#include "kv_view.hpp"
#include "model_config.hpp"

namespace cxlpool::infer {

class ArenaKvCache final : public KvCache {
 public:
  // The arena must have been created with this model's layers, KV heads,
  // head dim, f32 and the per-layer layout.
  static Result<ArenaKvCache> create(const ModelConfig& config, cxlpool_kv_arena* arena);
  KvLayerView layer(uint32_t layer) const override { return views_[layer]; }

 private:
  std::vector<KvLayerView> views_;
};

}  // namespace cxlpool::infer
