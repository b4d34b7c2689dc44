// SPDX-License-Identifier: Apache-2.0
// Decode attention of one query token over a row of the contiguous KV layout
// (GQA), computed by cuda/reference's CPU decode attention: the reference of
// the GPU kernel that reads the arena directly. Both of cxlpool-infer's paths
// call this one function.
#pragma once

#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "kv_view.hpp"
#include "model_config.hpp"

namespace cxlpool::infer {

// q: [n_heads][head_dim] (RoPE applied). Attends to tokens [0, n_tokens) of
// `row` and writes [n_heads][head_dim] to out.
Result<void> decode_attention(const ModelConfig& config, const float* q, const KvLayerView& kv, uint32_t row,
                              uint32_t n_tokens, float* out);

}  // namespace cxlpool::infer
