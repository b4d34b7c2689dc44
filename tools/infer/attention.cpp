// SPDX-License-Identifier: Apache-2.0
#include "attention.hpp"

#include <cmath>
#include <string>

#include "decode_attention_ref.hpp"

namespace cxlpool::infer {

Result<void> decode_attention(const ModelConfig& c, const float* q, const KvLayerView& kv, uint32_t row,
                              uint32_t n_tokens, float* out) {
  namespace ref = cxlpool::cuda::ref;
  ref::AttentionShape shape;
  shape.batch = 1;
  shape.q_heads = c.n_heads;
  shape.kv_heads = c.n_kv_heads;
  shape.head_dim = c.head_dim;
  shape.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  shape.dtype = ref::KvDtype::kF32;
  // One row at a time: the row's own base, so the arena's row stride (which
  // may be padded to whole pages) never has to be a whole number of tokens.
  ref::ContiguousKv view;
  view.k = kv.k_at(row, 0);
  view.v = kv.v_at(row, 0);
  view.row_stride_tokens = n_tokens;
  const int rc = ref::decode_attention(shape, q, view, &n_tokens, out);
  if (rc != 0) return fail(-rc, "decode attention over " + std::to_string(n_tokens) + " tokens failed");
  return {};
}

}  // namespace cxlpool::infer
