// SPDX-License-Identifier: Apache-2.0
// Decode attention through shared memory (the staged kernels): the
// semantics, launch geometry and split partials of decode_attention.cu, for
// 16-byte-aligned head rows of 65..128 elements (16 lanes a token), with K
// and V reaching the block through a ring of kStages shared-memory stages
// that cp.async fills. While the warps work on one stage the copies of the
// next two are in flight, so a block's reads overlap its arithmetic and the
// bytes in flight hold no registers.
//
// Why a second design: the register-staged kernels issue a loop step's
// loads, wait for all of them, then compute, and hold the loaded bytes in
// registers (168 a thread, 12 warps an SM). On a small call (batch 8,
// context 2048) a block runs only about six such steps and each pays a full
// memory latency with nothing else in flight. Here a block keeps two stages
// (32 KiB) of copies outstanding through its whole slice.
//
// Tokens outside the row or on a page outside the pool are zero-filled by
// the copy and dropped from the softmax by the same test the register
// kernels use; the paged kernels count them once per token and query head.
#include <cstdint>

#include "attention_math.hpp"
#include "decode_attention_params.hpp"
#include "decode_attention_split.cuh"

namespace {

using cxlpool::cuda::DecodeAttentionParams;

constexpr unsigned kWarps = cxlpool::cuda::kAttentionWarps;
constexpr unsigned kThreads = cxlpool::cuda::kAttentionThreads;
constexpr unsigned kHeads = cxlpool::cuda::kAttentionHeadsPerBlock;
constexpr unsigned kLanes = 16;                  // lanes that share a token
constexpr unsigned kTokensAtOnce = 32 / kLanes;  // tokens a warp works on at once
constexpr unsigned kMaxDim = cxlpool::cuda::kAttentionStagedMaxDim;  // 16 lanes x 8 elements
constexpr unsigned kElems = kMaxDim / kLanes;  // elements a lane holds of a token
constexpr unsigned kStages = cxlpool::cuda::kAttentionStages;
constexpr unsigned kHalfStage = cxlpool::cuda::kAttentionStageBytes;  // of K, and as much of V
constexpr unsigned kMaxTokens = cxlpool::cuda::kAttentionStagedMaxTokens;  // a bf16 stage's
constexpr unsigned kChunk = 16;  // bytes a cp.async moves
// (token, chunk) pairs a thread copies per stage at most: 512 of them (32
// bf16 or 16 f32 tokens of up to 16 or 32 chunks).
constexpr unsigned kRounds = kHalfStage / kChunk / kThreads;
static_assert(cxlpool::cuda::kAttentionStagedSharedBytes == kStages * (2 * kHalfStage + kMaxTokens));

// Tokens a stage holds: rows are laid out kMaxDim elements apart.
template <typename T>
__host__ __device__ constexpr unsigned stage_tokens() {
  return kHalfStage / (kMaxDim * sizeof(T));
}

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, or 16 zero bytes when !valid (the
// source is then not read, but must still be a mapped address).
__device__ __forceinline__ void copy_async(unsigned dst, const unsigned char* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? kChunk : 0u)
               : "memory");
}

__device__ __forceinline__ void commit_copies() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Returns when at most kPending of this thread's committed groups are still
// in flight.
template <unsigned kPending>
__device__ __forceinline__ void wait_copies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// kElems elements of a token's head row in shared memory, the ones lane j
// owns: 16-byte chunk j (bf16), or chunks j and j + 16 (f32), as f32.
// Chunks past the head row are zeros (never read: they hold no copy).
template <typename T>
__device__ __forceinline__ void read_row(const unsigned char* row, unsigned j, unsigned chunks,
                                         float (&f)[kElems]) {
  if constexpr (sizeof(T) == 2) {
    uint4 raw = make_uint4(0, 0, 0, 0);
    if (j < chunks) raw = *reinterpret_cast<const uint4*>(row + j * kChunk);
    const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
    for (unsigned i = 0; i < 8; ++i) {
      f[i] = __uint_as_float(i % 2 == 0 ? w[i / 2] << 16 : w[i / 2] & 0xFFFF0000u);
    }
  } else {
#pragma unroll
    for (unsigned mm = 0; mm < 2; ++mm) {
      float4 x = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (j + mm * kLanes < chunks) {
        x = *reinterpret_cast<const float4*>(row + (j + mm * kLanes) * kChunk);
      }
      f[mm * 4 + 0] = x.x;
      f[mm * 4 + 1] = x.y;
      f[mm * 4 + 2] = x.z;
      f[mm * 4 + 3] = x.w;
    }
  }
}

// The element of the head row that register i of lane j holds (the layout
// read_row gives).
template <typename T>
__device__ __forceinline__ unsigned element_of(unsigned j, unsigned i) {
  if constexpr (sizeof(T) == 2) return j * 8 + i;
  return (j + (i / 4) * kLanes) * 4 + i % 4;
}

// Copies tokens [t0, t0 + stage_tokens) of the block's KV head into stage
// `slot` (every thread a share of the (token, 16-byte chunk) pairs) and
// marks which of them exist. All of a thread's sources are found first, then
// its copies issued: a paged source needs a block-table load, and the copies'
// asm statements would otherwise order each load after the previous copy.
template <typename T, typename Rows>
__device__ void fill_stage(unsigned char* smem, unsigned slot, unsigned row, unsigned t0,
                           unsigned end, const Rows& rows, const unsigned char* k,
                           const unsigned char* v, uint64_t head_off, unsigned chunks,
                           unsigned* skipped) {
  constexpr unsigned kTokens = stage_tokens<T>();
  constexpr unsigned kRowStride = kMaxDim * sizeof(T);
  unsigned char* sk = smem + slot * 2 * kHalfStage;
  unsigned char* sv = sk + kHalfStage;
  unsigned char* valid = smem + kStages * 2 * kHalfStage + slot * kMaxTokens;
  const unsigned n = kTokens * chunks;
  uint64_t src[kRounds];
  bool ok[kRounds];
#pragma unroll
  for (unsigned r = 0; r < kRounds; ++r) {
    const unsigned c = threadIdx.x + r * kThreads;
    const unsigned i = c / chunks;
    const unsigned part = c % chunks;
    const bool inside = c < n && t0 + i < end;
    uint64_t off = 0;
    ok[r] = inside && rows.offset(row, t0 + i, &off);
    src[r] = ok[r] ? off + head_off + part * kChunk : 0;
    if (c < n && part == 0) {
      valid[i] = ok[r] ? 1 : 0;
      if (inside && !ok[r]) ++*skipped;
    }
  }
#pragma unroll
  for (unsigned r = 0; r < kRounds; ++r) {
    const unsigned c = threadIdx.x + r * kThreads;
    if (c >= n) break;
    const unsigned at = c / chunks * kRowStride + c % chunks * kChunk;
    copy_async(shared_address(sk + at), k + src[r], ok[r]);
    copy_async(shared_address(sv + at), v + src[r], ok[r]);
  }
}

template <typename T, typename Rows>
__device__ void attend_split_staged(const DecodeAttentionParams& p, const Rows& rows) {
  constexpr unsigned kTokens = stage_tokens<T>();
  constexpr unsigned kRowStride = kMaxDim * sizeof(T);
  constexpr unsigned kSlots = kTokens / (kWarps * kTokensAtOnce);  // per warp per stage
  extern __shared__ __align__(16) unsigned char smem[];  // kAttentionStagedSharedBytes

  cxlpool::cuda::attention::BlockWork w;
  if (!cxlpool::cuda::attention::start_block(p, &w)) return;
  const unsigned row = w.row, split = w.split, kv = w.kv, h0 = w.h0, nh = w.nh;
  const unsigned begin = w.begin, end = w.end;
  const unsigned head_dim = p.head_dim;
  const unsigned tiles = (end - begin + kTokens - 1) / kTokens;
  const unsigned chunks = head_dim * sizeof(T) / kChunk;
  const unsigned char* k = reinterpret_cast<const unsigned char*>(p.k);
  const unsigned char* v = reinterpret_cast<const unsigned char*>(p.v);
  const uint64_t head_off = static_cast<uint64_t>(kv) * head_dim * sizeof(T);
  unsigned skipped = 0;  // tokens this thread found on a page outside the pool

#pragma unroll
  for (unsigned s = 0; s + 1 < kStages; ++s) {
    if (s < tiles) {
      fill_stage<T>(smem, s, row, begin + s * kTokens, end, rows, k, v, head_off, chunks,
                    &skipped);
    }
    commit_copies();
  }

  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned j = lane % kLanes;
  const unsigned sub = lane / kLanes;
  float q[kHeads][kElems];
  float acc[kHeads][kElems];
  float m[kHeads];
  float l[kHeads];
  const float* qrow = reinterpret_cast<const float*>(p.q) +
                      (static_cast<uint64_t>(row) * p.q_heads + h0) * head_dim;
#pragma unroll
  for (unsigned hh = 0; hh < kHeads; ++hh) {
#pragma unroll
    for (unsigned i = 0; i < kElems; ++i) {
      const unsigned e = element_of<T>(j, i);
      q[hh][i] = hh < nh && e < head_dim ? qrow[hh * head_dim + e] * p.scale_log2 : 0.0f;
      acc[hh][i] = 0.0f;
    }
    m[hh] = -INFINITY;
    l[hh] = 0.0f;
  }

  for (unsigned tile = 0; tile < tiles; ++tile) {
    // This tile's copies have landed (for every thread), and every warp is
    // done with the stage the next fill overwrites (the one used last step).
    wait_copies<kStages - 2>();
    __syncthreads();
    const unsigned ahead = tile + kStages - 1;
    if (ahead < tiles) {
      fill_stage<T>(smem, ahead % kStages, row, begin + ahead * kTokens, end, rows, k, v,
                    head_off, chunks, &skipped);
    }
    commit_copies();  // an empty group past the last tile keeps the count uniform

    const unsigned char* sk = smem + (tile % kStages) * 2 * kHalfStage;
    const unsigned char* sv = sk + kHalfStage;
    const unsigned char* valid = smem + kStages * 2 * kHalfStage + (tile % kStages) * kMaxTokens;
    float s[kSlots][kHeads];
    bool ok[kSlots];
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) {
      const unsigned i = (warp * kSlots + u) * kTokensAtOnce + sub;
      ok[u] = valid[i] != 0;
      float kf[kElems];
      read_row<T>(sk + i * kRowStride, j, chunks, kf);
#pragma unroll
      for (unsigned hh = 0; hh < kHeads; ++hh) {
        float dot = 0.0f;
#pragma unroll
        for (unsigned e = 0; e < kElems; ++e) dot = fmaf(q[hh][e], kf[e], dot);
#pragma unroll
        for (unsigned o = kLanes / 2; o > 0; o /= 2) dot += __shfl_xor_sync(0xFFFFFFFFu, dot, o);
        s[u][hh] = ok[u] ? dot : -INFINITY;
      }
    }
    cxlpool::cuda::attention::online_softmax_step(m, l, acc, s);
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) {
      const unsigned i = (warp * kSlots + u) * kTokensAtOnce + sub;
      float vf[kElems];
      read_row<T>(sv + i * kRowStride, j, chunks, vf);
#pragma unroll
      for (unsigned e = 0; e < kElems; ++e) {
#pragma unroll
        for (unsigned hh = 0; hh < kHeads; ++hh) acc[hh][e] = fmaf(s[u][hh], vf[e], acc[hh][e]);
      }
#pragma unroll
      for (unsigned hh = 0; hh < kHeads; ++hh) l[hh] += s[u][hh];
    }
  }
  if (skipped != 0 && p.skipped != 0) {
    atomicAdd(reinterpret_cast<uint32_t*>(p.skipped), skipped * nh);
  }

  // The two tokens a warp held at once: the upper half-warp merges into
  // the lower.
  cxlpool::cuda::attention::merge_lane_groups(m, l, acc, kLanes);

  // Warps merge through the (now idle) stage memory.
  wait_copies<0>();
  __syncthreads();
  float (*s_acc)[kHeads][kMaxDim] = reinterpret_cast<float (*)[kHeads][kMaxDim]>(smem);
  float (*s_m)[kHeads] = reinterpret_cast<float (*)[kHeads]>(smem + sizeof(float) * kWarps * kHeads * kMaxDim);
  float (*s_l)[kHeads] = s_m + kWarps;
  if (sub == 0) {
#pragma unroll
    for (unsigned hh = 0; hh < kHeads; ++hh) {
#pragma unroll
      for (unsigned e = 0; e < kElems; ++e) {
        const unsigned d = element_of<T>(j, e);
        if (d < head_dim) s_acc[warp][hh][d] = acc[hh][e];
      }
      if (lane == 0) {
        s_m[warp][hh] = m[hh];
        s_l[warp][hh] = l[hh];
      }
    }
  }
  __syncthreads();

  cxlpool::cuda::attention::write_block_result<kMaxDim>(p, row, h0, nh, split, s_acc, s_m, s_l);
}

template <typename T>
__device__ void staged_contiguous(const DecodeAttentionParams& p) {
  attend_split_staged<T>(p, cxlpool::cuda::attention::contiguous_addr<T>(p));
}

template <typename T>
__device__ void staged_paged(const DecodeAttentionParams& p) {
  attend_split_staged<T>(p, cxlpool::cuda::attention::paged_addr<T>(p));
}

}  // namespace

// At most 128 registers and 48 KiB (and 96 bytes) of shared memory a block:
// four blocks (16 warps, 128 KiB of copies in flight) share an SM.
#define CXLPOOL_STAGED_KERNEL(name, layout, type)                  \
  extern "C" __global__ void __launch_bounds__(kThreads, 4)        \
      name(const DecodeAttentionParams p) {                        \
    layout<type>(p);                                               \
  }

CXLPOOL_STAGED_KERNEL(cxlpool_decode_attention_staged_f32, staged_contiguous, float)
CXLPOOL_STAGED_KERNEL(cxlpool_decode_attention_staged_bf16, staged_contiguous, uint16_t)
CXLPOOL_STAGED_KERNEL(cxlpool_decode_attention_paged_staged_f32, staged_paged, float)
CXLPOOL_STAGED_KERNEL(cxlpool_decode_attention_paged_staged_bf16, staged_paged, uint16_t)
