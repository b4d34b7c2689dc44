// SPDX-License-Identifier: Apache-2.0
// The one parameter block of the decode-attention kernels, shared by the
// launcher (kernels.cpp) and kernels/decode_attention.cu, which must agree
// on its layout byte for byte: plain integers and floats only, device
// addresses as uint64_t.
#pragma once

#include <cstdint>

namespace cxlpool::cuda {

struct DecodeAttentionParams {
  uint64_t q;         // f32 [batch][q_heads][head_dim]
  uint64_t k;         // contiguous tensor or page pool
  uint64_t v;
  uint64_t seq_lens;  // uint32_t [batch]
  uint64_t out;       // f32 [batch][q_heads][head_dim]
  // Split-context partial results (flash-decoding): for record
  // (row * q_heads + head) * n_splits + split, head_dim floats of
  // unnormalised weighted values and a (max, sum) pair, both in the log2
  // domain of the scores. Unused when n_splits is 1.
  uint64_t part_acc;
  uint64_t part_ml;
  // Paged layout only (table 0 for contiguous).
  uint64_t table;        // uint32_t [batch][blocks_per_row]
  uint64_t pool_pages;
  uint64_t skipped;      // uint32_t counter, or 0
  uint64_t row_stride_tokens;  // contiguous layout only
  // Fused reduce only: uint32_t [batch][kv_heads * head_chunks], zero
  // between launches; the blocks of a (row, head chunk) count themselves
  // done in it and the last one combines their partials and resets it.
  uint64_t done_counts;
  uint32_t blocks_per_row;
  uint32_t page_tokens;
  uint32_t q_heads;
  uint32_t kv_heads;
  uint32_t head_dim;
  uint32_t group;        // q_heads / kv_heads
  uint32_t head_chunks;  // ceil(group / kHeadsPerBlock): blocks per KV head and split
  uint32_t n_splits;     // the most context splits a row uses
  uint32_t split_len;    // tokens per split (a multiple of 32): rows of any
                         // length cut into splits of equal work; 0: each
                         // row cut evenly into n_splits (the previous plan)
  uint32_t token_lanes;  // lanes that share one token (power of two, <= 32)
  uint32_t fused_reduce; // 1: the last block of a row's splits combines the
                         // partials (no reduce launch); 0: the reduce kernel
  float scale_log2;      // scale * log2(e): scores in the exp2 domain
};

// Kernel geometry both sides rely on.
inline constexpr uint32_t kAttentionWarps = 4;
inline constexpr uint32_t kAttentionThreads = kAttentionWarps * 32;
inline constexpr uint32_t kAttentionHeadsPerBlock = 4;  // query heads of one KV head per block
inline constexpr uint32_t kAttentionUnroll = 4;         // tokens per lane group per loop step
inline constexpr uint32_t kAttentionUnrollPacked = 8;   // the same for bf16 with 16-byte loads
inline constexpr uint32_t kAttentionReduceThreads = 128;
// The shared-memory staged kernels (decode_attention_staged.cu): a ring of
// kAttentionStages stages, each kAttentionStageBytes of K and as many of V
// (rows kAttentionStagedMaxDim elements apart), then one validity byte per
// token of each stage. Dynamic shared memory: more than a block's 48 KiB of
// static shared memory.
inline constexpr uint32_t kAttentionStages = 3;
inline constexpr uint32_t kAttentionStageBytes = 8192;
inline constexpr uint32_t kAttentionStagedMaxDim = 128;
inline constexpr uint32_t kAttentionStagedMaxTokens = kAttentionStageBytes / (kAttentionStagedMaxDim * 2);
inline constexpr uint32_t kAttentionStagedSharedBytes =
    kAttentionStages * (2 * kAttentionStageBytes + kAttentionStagedMaxTokens);

}  // namespace cxlpool::cuda
