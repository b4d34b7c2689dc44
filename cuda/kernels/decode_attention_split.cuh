// SPDX-License-Identifier: Apache-2.0
// How the decode-attention kernels (decode_attention.cu and the staged
// ones in decode_attention_staged.cu) and the reduce kernel agree on a row's
// splits, and the base of an online softmax with no score yet.
#pragma once

#include <cstdint>

#include "decode_attention_params.hpp"

// Tokens per split of a row of `len` tokens: p.split_len, slices of one
// length for every row (the launcher sizes them so that n_splits slices
// cover the longest row); 0 asks for the previous planner, each row cut
// evenly into n_splits slices of whole 32-token granules, kept to measure
// against. The last split takes any tokens past n_splits slices, which
// only a row longer than the launcher was told of has. The reduce kernel
// agrees on it.
__device__ __forceinline__ unsigned split_tokens(unsigned len,
                                                 const cxlpool::cuda::DecodeAttentionParams& p) {
  if (p.split_len != 0) return p.split_len;
  const unsigned even = (len + p.n_splits - 1) / p.n_splits;
  return (even + 31) / 32 * 32;
}

__device__ __forceinline__ unsigned splits_used(unsigned len,
                                                const cxlpool::cuda::DecodeAttentionParams& p) {
  if (len == 0) return 0;
  const unsigned tps = split_tokens(len, p);
  return min(p.n_splits, (len + tps - 1) / tps);
}

__device__ __forceinline__ float safe_base(float m) { return m == -INFINITY ? 0.0f : m; }

