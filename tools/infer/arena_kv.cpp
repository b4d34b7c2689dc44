// SPDX-License-Identifier: Apache-2.0
#include "arena_kv.hpp"

namespace cxlpool::infer {

Result<ArenaKvCache> ArenaKvCache::create(const ModelConfig& config, cxlpool_kv_arena* arena) {
  ArenaKvCache cache;
  for (uint32_t l = 0; l < config.layers; ++l) {
    cxlpool_kv_arena_tensor k{}, v{};
    if (int rc = cxlpool_kv_arena_get_tensor(arena, l, CXLPOOL_ARENA_K, &k); rc < 0)
      return api_error("arena tensor K of layer " + std::to_string(l), rc);
    if (int rc = cxlpool_kv_arena_get_tensor(arena, l, CXLPOOL_ARENA_V, &v); rc < 0)
      return api_error("arena tensor V of layer " + std::to_string(l), rc);
    if (k.token_stride != config.kv_token_bytes() || v.token_stride != k.token_stride ||
        v.row_stride != k.row_stride)
      return fail(EINVAL, "arena layout does not match the model (token stride " + std::to_string(k.token_stride) +
                              ", expected " + std::to_string(config.kv_token_bytes()) + ")");
    KvLayerView view;
    view.k = reinterpret_cast<std::byte*>(static_cast<uintptr_t>(k.base));
    view.v = reinterpret_cast<std::byte*>(static_cast<uintptr_t>(v.base));
    view.row_stride = k.row_stride;
    view.token_stride = k.token_stride;
    cache.views_.push_back(view);
  }
  return cache;
}

}  // namespace cxlpool::infer
