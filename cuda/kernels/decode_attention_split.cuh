// SPDX-License-Identifier: Apache-2.0
// What the decode-attention kernels (decode_attention.cu and the staged
// ones in decode_attention_staged.cu) and the reduce kernel share: how a
// row is split, and the steps of the online softmax and of the merge of a
// block's partial results, which both kernel designs take the same way.
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


#include "grid_dependency.cuh"

namespace cxlpool::cuda::attention {

constexpr unsigned kWarps = kAttentionWarps;
constexpr unsigned kHeads = kAttentionHeadsPerBlock;

// Where token t of `row` lies in the K (or V) tensor, for both cache
// layouts: offset() gives its byte offset (false on a page outside the
// pool); index() its place in the page pool, as the register kernels look
// it up a step ahead.
struct ContiguousAddr {
  static constexpr bool kPaged = false;
  uint64_t row_bytes;
  uint64_t token_bytes;
  __device__ bool offset(unsigned row, unsigned t, uint64_t* out) const {
    *out = row * row_bytes + t * token_bytes;
    return true;
  }
  __device__ uint32_t index(unsigned, unsigned, unsigned, unsigned*) const { return 0; }
};

// A token's place in the page pool (page * page_tokens + its slot in the
// page), or kNoToken.
constexpr uint32_t kNoToken = 0xFFFFFFFFu;

struct PagedAddr {
  static constexpr bool kPaged = true;
  const uint32_t* table;
  uint32_t blocks_per_row;
  uint32_t page_tokens;
  uint64_t pool_pages;
  uint64_t token_bytes;
  __device__ bool offset(unsigned row, unsigned t, uint64_t* out) const {
    const uint64_t page = __ldg(table + static_cast<uint64_t>(row) * blocks_per_row + t / page_tokens);
    if (page >= pool_pages) return false;
    *out = (page * page_tokens + t % page_tokens) * token_bytes;
    return true;
  }
  // Token t's pool index, kNoToken past `end` or on a page outside the pool
  // (counted into *skipped). The launcher uses it only for pools of fewer
  // than kNoToken tokens.
  __device__ uint32_t index(unsigned row, unsigned t, unsigned end, unsigned* skipped) const {
    if (t >= end) return kNoToken;
    const uint32_t page = __ldg(table + static_cast<uint64_t>(row) * blocks_per_row + t / page_tokens);
    if (page >= pool_pages) {
      ++*skipped;
      return kNoToken;
    }
    return page * page_tokens + t % page_tokens;
  }
};

// The addressing of the launch's layout, from its parameters.
template <typename T>
__device__ __forceinline__ ContiguousAddr contiguous_addr(const DecodeAttentionParams& p) {
  const uint64_t token_bytes = static_cast<uint64_t>(p.kv_heads) * p.head_dim * sizeof(T);
  return ContiguousAddr{p.row_stride_tokens * token_bytes, token_bytes};
}

template <typename T>
__device__ __forceinline__ PagedAddr paged_addr(const DecodeAttentionParams& p) {
  const uint64_t token_bytes = static_cast<uint64_t>(p.kv_heads) * p.head_dim * sizeof(T);
  return PagedAddr{reinterpret_cast<const uint32_t*>(p.table), p.blocks_per_row, p.page_tokens,
                   p.pool_pages, token_bytes};
}

// What a block of the main kernels works on, from its place in the grid:
// one row, one KV head, `nh` of the query heads that share it from h0 on,
// and tokens [begin, end) of the row, which holds `len`.
struct BlockWork {
  unsigned row, split, kv, h0, nh, len, begin, end;
};

// A main kernel's first step: waits until the previous kernel of the
// stream has finished (nothing it writes, q, the lengths or the cache, is
// read before) and lets the next one launch, then finds the block's work.
// False when the block's slice is empty: it has written the zeros it owns
// (with one split, a row of length 0; fused, the first split's block of an
// empty row, as the row has no last block to combine) and is done.
__device__ __forceinline__ bool start_block(const DecodeAttentionParams& p, BlockWork* w) {
  wait_for_previous_grid();
  let_next_grid_launch();
  w->row = blockIdx.y;
  w->split = blockIdx.z;
  w->kv = blockIdx.x / p.head_chunks;
  const unsigned chunk = blockIdx.x % p.head_chunks;
  w->h0 = w->kv * p.group + chunk * kHeads;
  w->nh = min(kHeads, p.group - chunk * kHeads);
  const unsigned len = reinterpret_cast<const uint32_t*>(p.seq_lens)[w->row];
  w->len = len;
  const unsigned tps = split_tokens(len, p);
  w->begin = w->split * tps;
  if (w->begin >= len) {
    if (p.n_splits == 1 || (p.fused_reduce != 0 && w->split == 0)) {
      float* out = reinterpret_cast<float*>(p.out) +
                   (static_cast<uint64_t>(w->row) * p.q_heads + w->h0) * p.head_dim;
      for (unsigned i = threadIdx.x; i < w->nh * p.head_dim; i += kAttentionThreads) out[i] = 0.0f;
    }
    return false;
  }
  w->end = w->split + 1 == p.n_splits ? len : min(len, w->begin + tps);
  return true;
}

// One loop step of the online softmax (scores in the log2 domain): raises
// each head's running max to cover the step's kSlots scores, rescales the
// running sum and accumulator to it, and turns the scores into weights.
template <unsigned kSlots, unsigned kElems>
__device__ __forceinline__ void online_softmax_step(float (&m)[kHeads], float (&l)[kHeads],
                                                    float (&acc)[kHeads][kElems],
                                                    float (&s)[kSlots][kHeads]) {
#pragma unroll
  for (unsigned hh = 0; hh < kHeads; ++hh) {
    float mx = m[hh];
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) mx = fmaxf(mx, s[u][hh]);
    const float b = safe_base(mx);
    const float corr = exp2f(m[hh] - b);
    l[hh] *= corr;
#pragma unroll
    for (unsigned i = 0; i < kElems; ++i) acc[hh][i] *= corr;
    m[hh] = mx;
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) s[u][hh] = exp2f(s[u][hh] - b);
  }
}

// A warp's lane groups hold the same elements of different tokens: merges
// them, by shuffles from `lanes` apart up to 16, into the lanes of group 0.
template <unsigned kElems>
__device__ __forceinline__ void merge_lane_groups(float (&m)[kHeads], float (&l)[kHeads],
                                                  float (&acc)[kHeads][kElems], unsigned lanes) {
  for (unsigned o = lanes; o < 32; o *= 2) {
#pragma unroll
    for (unsigned hh = 0; hh < kHeads; ++hh) {
      const float om = __shfl_xor_sync(0xFFFFFFFFu, m[hh], o);
      const float ol = __shfl_xor_sync(0xFFFFFFFFu, l[hh], o);
      const float mx = fmaxf(m[hh], om);
      const float b = safe_base(mx);
      const float w1 = exp2f(m[hh] - b);
      const float w2 = exp2f(om - b);
      l[hh] = l[hh] * w1 + ol * w2;
#pragma unroll
      for (unsigned i = 0; i < kElems; ++i) {
        const float oa = __shfl_xor_sync(0xFFFFFFFFu, acc[hh][i], o);
        acc[hh][i] = acc[hh][i] * w1 + oa * w2;
      }
      m[hh] = mx;
    }
  }
}

// The block's warps, merged through shared memory (each warp's
// accumulator, max and sum per head, kDim floats apart), give the block's
// result for its `nh` heads: the normalised output with one split, else the
// split's partial record for the reduce.
template <unsigned kDim>
__device__ __forceinline__ void write_block_result(const DecodeAttentionParams& p, unsigned row,
                                                   unsigned h0, unsigned nh, unsigned split,
                                                   const float (*s_acc)[kHeads][kDim],
                                                   const float (*s_m)[kHeads],
                                                   const float (*s_l)[kHeads]) {
  const unsigned head_dim = p.head_dim;
  for (unsigned i = threadIdx.x; i < nh * head_dim; i += kAttentionThreads) {
    const unsigned hh = i / head_dim;
    const unsigned d = i % head_dim;
    float mx = -INFINITY;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) mx = fmaxf(mx, s_m[w][hh]);
    const float b = safe_base(mx);
    float total = 0.0f;
    float a = 0.0f;
#pragma unroll
    for (unsigned w = 0; w < kWarps; ++w) {
      const float wt = exp2f(s_m[w][hh] - b);  // 0 for a warp that saw no token
      total += s_l[w][hh] * wt;
      a += s_acc[w][hh][d] * wt;
    }
    const uint64_t head = static_cast<uint64_t>(row) * p.q_heads + h0 + hh;
    if (p.n_splits == 1) {
      reinterpret_cast<float*>(p.out)[head * head_dim + d] = total > 0.0f ? a / total : 0.0f;
    } else {
      const uint64_t rec = head * p.n_splits + split;
      reinterpret_cast<float*>(p.part_acc)[rec * head_dim + d] = a;
      if (d == 0) {
        reinterpret_cast<float*>(p.part_ml)[2 * rec] = mx;
        reinterpret_cast<float*>(p.part_ml)[2 * rec + 1] = total;
      }
    }
  }
}

}  // namespace cxlpool::cuda::attention
