// SPDX-License-Identifier: Apache-2.0
// CPU reference of decode attention (kernels/decode_attention.cu): one new
// token per batch row attends over that row's cached keys and values.
//
//   out[r][h] = softmax_t(scale * q[r][h] . K[r][t][g]) . V[r][t][g],
//   t < seq_lens[r], g = h / (q_heads / kv_heads)   (grouped-query attention)
//
// Two layouts of the same cache:
//  - contiguous: the KV arena's tensors, [row][token][kv_head][head_dim] with
//    rows `row_stride_tokens` tokens apart; the kernel indexes them directly,
//    which is what a vAttention-style arena makes possible;
//  - paged: a pool of pages [page][page_tokens][kv_head][head_dim] and a
//    block table naming, per row, the page that holds each run of
//    `page_tokens` tokens (the PagedAttention layout).
// Both run the same arithmetic in the same order, so on the same data they
// give bit-identical results; only the address of token t differs.
//
// q and out are f32 [batch][q_heads][head_dim]; K and V are f32 or bf16;
// scores, softmax and the weighted sum accumulate in f32. A row with
// seq_lens[r] == 0 gets zeros. Dot products sum head_dim in 8 interleaved
// partial sums added pairwise at the end, so results are deterministic (the
// same on every call and in every program) while the loop still vectorizes.
//
// Plain C++ with no dependencies: usable from tools and tests anywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cxlpool::cuda::ref {

enum class KvDtype : uint32_t { kF32 = 0, kBf16 = 1 };

constexpr size_t dtype_bytes(KvDtype dtype) { return dtype == KvDtype::kBf16 ? 2 : 4; }

struct AttentionShape {
  uint32_t batch = 0;
  uint32_t q_heads = 0;
  uint32_t kv_heads = 0;  // must divide q_heads
  uint32_t head_dim = 0;  // 1..kMaxHeadDim
  float scale = 0.0f;     // usually 1 / sqrt(head_dim)
  KvDtype dtype = KvDtype::kF32;
};

// The GPU kernel keeps a row of the output in registers: at most this many.
inline constexpr uint32_t kMaxHeadDim = 256;

struct ContiguousKv {
  const void* k = nullptr;
  const void* v = nullptr;
  uint64_t row_stride_tokens = 0;  // the arena's max_context; >= every seq_len
};

struct PagedKv {
  const void* k_pages = nullptr;
  const void* v_pages = nullptr;
  uint64_t pool_pages = 0;             // pages in each pool (bounds check)
  uint32_t page_tokens = 0;            // tokens per page
  const uint32_t* block_table = nullptr;  // [batch][blocks_per_row]
  uint32_t blocks_per_row = 0;         // >= ceil(seq_len / page_tokens) for every row
};

// Bytes of one token's K (or V): kv_heads * head_dim * dtype_bytes.
size_t token_bytes(const AttentionShape& shape);

// 0, or -EINVAL when the shape is malformed (zero sizes, kv_heads not
// dividing q_heads, head_dim > kMaxHeadDim, scale not finite).
int check_shape(const AttentionShape& shape);

// Returns 0; -EINVAL for a bad shape, a null pointer, or a seq_len beyond
// row_stride_tokens. `out` is written only on success.
int decode_attention(const AttentionShape& shape, const float* q, const ContiguousKv& kv,
                     const uint32_t* seq_lens, float* out);

// Returns 0; -EINVAL as above or when a row needs more than blocks_per_row
// pages; -ERANGE when a block-table entry a row uses is >= pool_pages.
int decode_attention_paged(const AttentionShape& shape, const float* q, const PagedKv& kv,
                           const uint32_t* seq_lens, float* out);

// Copies rows of a contiguous cache (one tensor: K or V) into pages per a
// block table: token t of row r goes to page block_table[r][t / page_tokens].
// Tests and benchmarks use it to build the paged twin of an arena. Returns 0,
// -EINVAL / -ERANGE like decode_attention_paged.
int copy_to_pages(const AttentionShape& shape, const void* contiguous, uint64_t row_stride_tokens,
                  const uint32_t* seq_lens, void* pages, uint64_t pool_pages, uint32_t page_tokens,
                  const uint32_t* block_table, uint32_t blocks_per_row);

}  // namespace cxlpool::cuda::ref
