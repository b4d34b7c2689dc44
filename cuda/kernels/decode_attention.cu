// SPDX-License-Identifier: Apache-2.0
// Decode attention: one new token per batch row attends over the row's KV
// cache. CPU reference: reference/decode_attention_ref.cpp (same semantics;
// results agree to float rounding, not bit for bit: the GPU sums in another
// order and uses an online softmax).
//
// One block per (query head, row), kWarps warps. Each warp walks every
// kWarps-th token: the 32 lanes read one token's head row together (lane i
// holds dims i, i+32, ...; coalesced), reduce the dot product with shuffles
// and fold the token into a running max / sum / weighted value (online
// softmax), so no score buffer of seq_len floats is needed. The warps'
// partial results are merged through shared memory at the end.
//
// The contiguous kernels index the arena's [row][token][kv_head][dim]
// tensors directly; the paged ones look each token's page up in a block
// table. Pages outside the pool are skipped and counted, as a block table
// comes from a client.
#include <cstdint>

#include "attention_math.hpp"

namespace {

constexpr unsigned kWarps = 4;
constexpr unsigned kLanes = 32;
constexpr unsigned kPerLane = 8;  // kMaxHeadDim / kLanes
constexpr unsigned kMaxHeadDim = kLanes * kPerLane;

__device__ __forceinline__ float load(const float* p, unsigned i) { return p[i]; }
__device__ __forceinline__ float load(const uint16_t* p, unsigned i) {
  return cxlpool::cuda::math::bf16_to_f32(p[i]);
}

struct ContiguousAddr {
  uint64_t row_bytes;
  uint64_t token_bytes;
  __device__ bool offset(unsigned row, unsigned t, uint64_t* out) const {
    *out = row * row_bytes + t * token_bytes;
    return true;
  }
};

struct PagedAddr {
  const uint32_t* table;
  uint32_t blocks_per_row;
  uint32_t page_tokens;
  uint64_t pool_pages;
  uint64_t token_bytes;
  __device__ bool offset(unsigned row, unsigned t, uint64_t* out) const {
    const uint64_t page = table[static_cast<uint64_t>(row) * blocks_per_row + t / page_tokens];
    if (page >= pool_pages) return false;
    *out = (page * page_tokens + t % page_tokens) * token_bytes;
    return true;
  }
};

template <typename T, typename Addr>
__device__ void attend(const float* q, const unsigned char* k, const unsigned char* v,
                       const uint32_t* seq_lens, float* out, unsigned q_heads, unsigned kv_heads,
                       unsigned head_dim, float scale, const Addr& addr, uint32_t* skipped) {
  __shared__ float warp_max[kWarps];
  __shared__ float warp_sum[kWarps];
  __shared__ float warp_acc[kWarps][kMaxHeadDim];

  const unsigned h = blockIdx.x;
  const unsigned row = blockIdx.y;
  const unsigned g = h / (q_heads / kv_heads);
  const unsigned lane = threadIdx.x % kLanes;
  const unsigned warp = threadIdx.x / kLanes;
  const unsigned len = seq_lens[row];
  const float* qh = q + (static_cast<uint64_t>(row) * q_heads + h) * head_dim;
  const uint64_t head_offset = static_cast<uint64_t>(g) * head_dim * sizeof(T);

  float qv[kPerLane];
  float acc[kPerLane];
#pragma unroll
  for (unsigned i = 0; i < kPerLane; ++i) {
    const unsigned d = lane + i * kLanes;
    qv[i] = d < head_dim ? qh[d] : 0.0f;
    acc[i] = 0.0f;
  }
  float max = -INFINITY;
  float sum = 0.0f;
  for (unsigned t = warp; t < len; t += kWarps) {
    uint64_t offset = 0;
    if (!addr.offset(row, t, &offset)) {
      if (lane == 0 && skipped != nullptr) atomicAdd(skipped, 1u);
      continue;
    }
    const T* kt = reinterpret_cast<const T*>(k + offset + head_offset);
    const T* vt = reinterpret_cast<const T*>(v + offset + head_offset);
    float s = 0.0f;
#pragma unroll
    for (unsigned i = 0; i < kPerLane; ++i) {
      const unsigned d = lane + i * kLanes;
      if (d < head_dim) s += qv[i] * load(kt, d);
    }
#pragma unroll
    for (unsigned o = kLanes / 2; o > 0; o /= 2) s += __shfl_xor_sync(0xFFFFFFFFu, s, o);
    s *= scale;
    const float new_max = fmaxf(max, s);
    const float correction = expf(max - new_max);  // 0 for the first token (max = -inf)
    const float p = expf(s - new_max);
    sum = sum * correction + p;
#pragma unroll
    for (unsigned i = 0; i < kPerLane; ++i) {
      const unsigned d = lane + i * kLanes;
      if (d < head_dim) acc[i] = acc[i] * correction + p * load(vt, d);
    }
    max = new_max;
  }

  if (lane == 0) {
    warp_max[warp] = max;
    warp_sum[warp] = sum;
  }
#pragma unroll
  for (unsigned i = 0; i < kPerLane; ++i) {
    const unsigned d = lane + i * kLanes;
    if (d < head_dim) warp_acc[warp][d] = acc[i];
  }
  __syncthreads();

  float total_max = -INFINITY;
  for (unsigned w = 0; w < kWarps; ++w) total_max = fmaxf(total_max, warp_max[w]);
  float weight[kWarps];
  float total = 0.0f;
  for (unsigned w = 0; w < kWarps; ++w) {
    // A warp that saw no token has max -inf and contributes nothing.
    weight[w] = warp_max[w] == -INFINITY ? 0.0f : expf(warp_max[w] - total_max);
    total += warp_sum[w] * weight[w];
  }
  float* oh = out + (static_cast<uint64_t>(row) * q_heads + h) * head_dim;
  for (unsigned d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float o = 0.0f;
    for (unsigned w = 0; w < kWarps; ++w) o += warp_acc[w][d] * weight[w];
    oh[d] = total > 0.0f ? o / total : 0.0f;
  }
}

template <typename T>
__device__ void contiguous(const float* q, const unsigned char* k, const unsigned char* v,
                           const uint32_t* seq_lens, float* out, unsigned q_heads,
                           unsigned kv_heads, unsigned head_dim, float scale,
                           uint64_t row_stride_tokens) {
  const uint64_t token_bytes = static_cast<uint64_t>(kv_heads) * head_dim * sizeof(T);
  const ContiguousAddr addr{row_stride_tokens * token_bytes, token_bytes};
  attend<T>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale, addr, nullptr);
}

template <typename T>
__device__ void paged(const float* q, const unsigned char* k, const unsigned char* v,
                      const uint32_t* seq_lens, float* out, unsigned q_heads, unsigned kv_heads,
                      unsigned head_dim, float scale, const uint32_t* table,
                      uint32_t blocks_per_row, uint32_t page_tokens, uint64_t pool_pages,
                      uint32_t* skipped) {
  const uint64_t token_bytes = static_cast<uint64_t>(kv_heads) * head_dim * sizeof(T);
  const PagedAddr addr{table, blocks_per_row, page_tokens, pool_pages, token_bytes};
  attend<T>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale, addr, skipped);
}

}  // namespace

#define CXLPOOL_CONTIGUOUS_ARGS                                                         \
  const float *q, const unsigned char *k, const unsigned char *v,                       \
      const uint32_t *seq_lens, float *out, unsigned q_heads, unsigned kv_heads,        \
      unsigned head_dim, float scale, uint64_t row_stride_tokens
#define CXLPOOL_PAGED_ARGS                                                               \
  const float *q, const unsigned char *k, const unsigned char *v,                       \
      const uint32_t *seq_lens, float *out, unsigned q_heads, unsigned kv_heads,        \
      unsigned head_dim, float scale, const uint32_t *table, uint32_t blocks_per_row,   \
      uint32_t page_tokens, uint64_t pool_pages, uint32_t *skipped

extern "C" __global__ void __launch_bounds__(kWarps * kLanes)
    cxlpool_decode_attention_f32(CXLPOOL_CONTIGUOUS_ARGS) {
  contiguous<float>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale,
                    row_stride_tokens);
}

extern "C" __global__ void __launch_bounds__(kWarps * kLanes)
    cxlpool_decode_attention_bf16(CXLPOOL_CONTIGUOUS_ARGS) {
  contiguous<uint16_t>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale,
                       row_stride_tokens);
}

extern "C" __global__ void __launch_bounds__(kWarps * kLanes)
    cxlpool_decode_attention_paged_f32(CXLPOOL_PAGED_ARGS) {
  paged<float>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale, table,
               blocks_per_row, page_tokens, pool_pages, skipped);
}

extern "C" __global__ void __launch_bounds__(kWarps * kLanes)
    cxlpool_decode_attention_paged_bf16(CXLPOOL_PAGED_ARGS) {
  paged<uint16_t>(q, k, v, seq_lens, out, q_heads, kv_heads, head_dim, scale, table,
                  blocks_per_row, page_tokens, pool_pages, skipped);
}
