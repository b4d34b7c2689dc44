// SPDX-License-Identifier: Apache-2.0
#include "decode_attention_ref.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "attention_math.hpp"
#include "vector_math.hpp"

namespace cxlpool::cuda::ref {
namespace {

constexpr uint32_t kLanes = 8;

// acc += p * v. Element-wise, so vectorizing it changes no result; the
// restrict qualifiers let the compiler do so without alias checks.
// Fixed-size blocks of kLanes: -O2's cheap vectorizer takes those, not loops
// of unknown trip count.
void axpy(float* __restrict acc, const float* __restrict v, float p, uint32_t n) {
  size_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    float* __restrict a = acc + d;
    const float* __restrict b = v + d;
    for (size_t j = 0; j < kLanes; ++j) a[j] += p * b[j];
  }
  for (; d < n; ++d) acc[d] += p * v[d];
}

void widen_bf16(float* __restrict dst, const uint16_t* __restrict src, uint32_t n) {
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    float* __restrict d = dst + i;
    const uint16_t* __restrict s = src + i;
    for (size_t j = 0; j < kLanes; ++j) d[j] = math::bf16_to_f32(s[j]);
  }
  for (; i < n; ++i) dst[i] = math::bf16_to_f32(src[i]);
}

// A row of one kv head as f32: f32 data is used in place, bf16 is widened
// into `scratch`.
const float* widen(const std::byte* src, KvDtype dtype, uint32_t n, float* scratch) {
  if (dtype == KvDtype::kF32) {
    // Arena and page pools are at least 4-byte aligned; memcpy would cost a copy per token.
    return reinterpret_cast<const float*>(src);
  }
  // Caches are at least 2-byte aligned (arena pages, pools of uint16_t).
  widen_bf16(scratch, reinterpret_cast<const uint16_t*>(src), n);
  return scratch;
}

// Where token t of a row lives: the only thing the two layouts disagree on.
struct ContiguousRow {
  const std::byte* k;
  const std::byte* v;
  size_t token_bytes;
  const std::byte* k_at(uint32_t t) const { return k + t * token_bytes; }
  const std::byte* v_at(uint32_t t) const { return v + t * token_bytes; }
};

struct PagedRow {
  const std::byte* k_pages;
  const std::byte* v_pages;
  const uint32_t* blocks;  // this row's block-table entries
  uint32_t page_tokens;
  size_t token_bytes;
  size_t slot(uint32_t t) const {
    return (size_t{blocks[t / page_tokens]} * page_tokens + t % page_tokens) * token_bytes;
  }
  const std::byte* k_at(uint32_t t) const { return k_pages + slot(t); }
  const std::byte* v_at(uint32_t t) const { return v_pages + slot(t); }
};

// Scratch reused across rows of one call.
struct Scratch {
  std::vector<float> scores;  // [group][seq_len]
  std::vector<float> acc;     // [group][head_dim]
  std::vector<float> row;     // one widened head row
};

template <typename Row>
void attend_row(const AttentionShape& s, const float* q_row, const Row& row, uint32_t seq_len,
                float* out_row, Scratch& scratch) {
  const uint32_t group = s.q_heads / s.kv_heads;
  const uint32_t dim = s.head_dim;
  const size_t head_bytes = size_t{dim} * dtype_bytes(s.dtype);
  if (seq_len == 0) {
    std::fill(out_row, out_row + size_t{s.q_heads} * dim, 0.0f);
    return;
  }
  scratch.scores.resize(size_t{group} * seq_len);
  scratch.acc.resize(size_t{group} * dim);
  scratch.row.resize(dim);
  for (uint32_t g = 0; g < s.kv_heads; ++g) {
    const float* q_group = q_row + size_t{g} * group * dim;
    // Each K row is read once for every query head of its group.
    for (uint32_t t = 0; t < seq_len; ++t) {
      const float* k = widen(row.k_at(t) + g * head_bytes, s.dtype, dim, scratch.row.data());
      for (uint32_t h = 0; h < group; ++h) {
        scratch.scores[size_t{h} * seq_len + t] = dot(q_group + size_t{h} * dim, k, dim) * s.scale;
      }
    }
    // Normalising the weights rather than the output keeps one division per token.
    for (uint32_t h = 0; h < group; ++h) softmax(&scratch.scores[size_t{h} * seq_len], seq_len);
    std::fill(scratch.acc.begin(), scratch.acc.end(), 0.0f);
    for (uint32_t t = 0; t < seq_len; ++t) {
      const float* v = widen(row.v_at(t) + g * head_bytes, s.dtype, dim, scratch.row.data());
      for (uint32_t h = 0; h < group; ++h) {
        axpy(&scratch.acc[size_t{h} * dim], v, scratch.scores[size_t{h} * seq_len + t], dim);
      }
    }
    std::copy(scratch.acc.begin(), scratch.acc.end(), out_row + size_t{g} * group * dim);
  }
}

// Attends every row of the batch; row_of(r) says where row r's tokens live.
template <typename RowOf>
void attend_rows(const AttentionShape& s, const float* q, const uint32_t* seq_lens, float* out, const RowOf& row_of) {
  const size_t qo_row = size_t{s.q_heads} * s.head_dim;
  Scratch scratch;
  for (uint32_t r = 0; r < s.batch; ++r) {
    attend_row(s, q + r * qo_row, row_of(r), seq_lens[r], out + r * qo_row, scratch);
  }
}

int check_pages(const AttentionShape& s, const PagedKv& kv, const uint32_t* seq_lens) {
  if (kv.page_tokens == 0 || kv.block_table == nullptr) return -EINVAL;
  for (uint32_t r = 0; r < s.batch; ++r) {
    const uint64_t blocks = (uint64_t{seq_lens[r]} + kv.page_tokens - 1) / kv.page_tokens;
    if (blocks > kv.blocks_per_row) return -EINVAL;
    for (uint64_t b = 0; b < blocks; ++b) {
      if (kv.block_table[size_t{r} * kv.blocks_per_row + b] >= kv.pool_pages) return -ERANGE;
    }
  }
  return 0;
}

}  // namespace

size_t token_bytes(const AttentionShape& shape) {
  return size_t{shape.kv_heads} * shape.head_dim * dtype_bytes(shape.dtype);
}

int check_shape(const AttentionShape& s) {
  if (s.batch == 0 || s.q_heads == 0 || s.kv_heads == 0 || s.head_dim == 0) return -EINVAL;
  if (s.q_heads % s.kv_heads != 0 || s.head_dim > kMaxHeadDim) return -EINVAL;
  if (s.dtype != KvDtype::kF32 && s.dtype != KvDtype::kBf16) return -EINVAL;
  if (!std::isfinite(s.scale)) return -EINVAL;
  return 0;
}

namespace {

// check_shape, and every pointer the kernels read or write is set.
int check_args(const AttentionShape& s, const float* q, const uint32_t* seq_lens,
               const float* out, const void* k, const void* v) {
  if (const int r = check_shape(s); r != 0) return r;
  if (q == nullptr || out == nullptr || seq_lens == nullptr || k == nullptr || v == nullptr) {
    return -EINVAL;
  }
  return 0;
}

}  // namespace

int decode_attention(const AttentionShape& s, const float* q, const ContiguousKv& kv,
                     const uint32_t* seq_lens, float* out) {
  if (const int r = check_args(s, q, seq_lens, out, kv.k, kv.v); r != 0) return r;
  for (uint32_t r = 0; r < s.batch; ++r) {
    if (seq_lens[r] > kv.row_stride_tokens) return -EINVAL;
  }
  const size_t tb = token_bytes(s);
  const size_t row_bytes = tb * kv.row_stride_tokens;
  attend_rows(s, q, seq_lens, out, [&](uint32_t r) {
    return ContiguousRow{static_cast<const std::byte*>(kv.k) + r * row_bytes,
                         static_cast<const std::byte*>(kv.v) + r * row_bytes, tb};
  });
  return 0;
}

int decode_attention_paged(const AttentionShape& s, const float* q, const PagedKv& kv,
                           const uint32_t* seq_lens, float* out) {
  if (const int r = check_args(s, q, seq_lens, out, kv.k_pages, kv.v_pages); r != 0) return r;
  if (const int r = check_pages(s, kv, seq_lens); r != 0) return r;
  const size_t tb = token_bytes(s);
  attend_rows(s, q, seq_lens, out, [&](uint32_t r) {
    return PagedRow{static_cast<const std::byte*>(kv.k_pages), static_cast<const std::byte*>(kv.v_pages),
                    kv.block_table + size_t{r} * kv.blocks_per_row, kv.page_tokens, tb};
  });
  return 0;
}

int copy_to_pages(const AttentionShape& s, const void* contiguous, uint64_t row_stride_tokens,
                  const uint32_t* seq_lens, void* pages, uint64_t pool_pages, uint32_t page_tokens,
                  const uint32_t* block_table, uint32_t blocks_per_row) {
  if (const int r = check_shape(s); r != 0) return r;
  if (contiguous == nullptr || pages == nullptr || seq_lens == nullptr) return -EINVAL;
  const PagedKv kv{pages, pages, pool_pages, page_tokens, block_table, blocks_per_row};
  if (const int r = check_pages(s, kv, seq_lens); r != 0) return r;
  const size_t tb = token_bytes(s);
  for (uint32_t r = 0; r < s.batch; ++r) {
    if (seq_lens[r] > row_stride_tokens) return -EINVAL;
  }
  for (uint32_t r = 0; r < s.batch; ++r) {
    const auto* src = static_cast<const std::byte*>(contiguous) + r * row_stride_tokens * tb;
    const PagedRow row{static_cast<const std::byte*>(pages), nullptr,
                       block_table + size_t{r} * blocks_per_row, page_tokens, tb};
    for (uint32_t t = 0; t < seq_lens[r]; t += page_tokens) {
      const uint32_t n = std::min(page_tokens, seq_lens[r] - t);
      std::memcpy(static_cast<std::byte*>(pages) + row.slot(t), src + t * tb, n * tb);
    }
  }
  return 0;
}

}  // namespace cxlpool::cuda::ref
