// SPDX-License-Identifier: Apache-2.0
// Decode attention: one new token per batch row attends over the row's KV
// cache. CPU reference: reference/decode_attention_ref.cpp (same semantics;
// results agree to float rounding, not bit for bit: the GPU sums in another
// order, splits the context and uses an online softmax in the exp2 domain).
//
// A decode step reads every cached K and V byte once and does two FMAs per
// byte pair per query head: it is bound by memory bandwidth, so the kernel is
// built to keep HBM busy (flash-decoding):
//  - A block owns one KV head of one row, up to kHeadsPerBlock of the query
//    heads that share it (GQA), and one of n_splits slices of the row's
//    context: K/V bytes are read once per block and the grid holds enough
//    blocks to fill the GPU even at small batch.
//  - token_lanes lanes share a token: each reads 16-byte vectors of its K and
//    V rows (scalar loads when the head row is not 16-byte aligned), and the
//    lanes' partial dot products meet through shuffles. A warp covers
//    32 / token_lanes tokens per load slot and issues 4 slots' loads (8 for
//    bf16, kept packed until used) before using any of them. The usual
//    token_lanes, 16, is a compile-time constant in its own kernels.
//  - Scores are kept in the log2 domain (q pre-scaled by scale * log2 e), the
//    softmax is online (running max and sum per head, corrected once per
//    loop step), accumulation is f32.
//  - Lane groups merge through shuffles, warps through shared memory. With
//    one split the block normalises and writes the output; otherwise it
//    writes its (acc, max, sum) partial, and the last block of the row's
//    splits to finish combines them (combine_if_last: one launch a call), or,
//    when the launcher asks for the previous design, a second launch of
//    cxlpool_decode_attention_reduce does.
//
// The contiguous kernels index the arena's [row][token][kv_head][dim]
// tensors directly; the paged ones look each token's page up in a block
// table. Pages outside the pool are skipped and counted, as a block table
// comes from a client.
#include <cstdint>

#include "attention_math.hpp"
#include "decode_attention_params.hpp"
#include "decode_attention_split.cuh"
#include "grid_dependency.cuh"

namespace {

using cxlpool::cuda::DecodeAttentionParams;

constexpr unsigned kWarps = cxlpool::cuda::kAttentionWarps;
constexpr unsigned kThreads = cxlpool::cuda::kAttentionThreads;
constexpr unsigned kHeads = cxlpool::cuda::kAttentionHeadsPerBlock;
constexpr unsigned kUnroll = cxlpool::cuda::kAttentionUnroll;
constexpr unsigned kMaxHeadDim = 256;
constexpr unsigned kMaxElems = kMaxHeadDim / 32;  // per lane per token
constexpr unsigned kMaxSplits = 256;              // the launcher never asks for more

// kVec elements at p, widened to f32.
template <typename T, unsigned kVec>
struct Vec;

template <>
struct Vec<float, 4> {
  __device__ static void load(const unsigned char* p, float* f) {
    const float4 x = __ldg(reinterpret_cast<const float4*>(p));
    f[0] = x.x;
    f[1] = x.y;
    f[2] = x.z;
    f[3] = x.w;
  }
};

template <>
struct Vec<float, 1> {
  __device__ static void load(const unsigned char* p, float* f) {
    f[0] = __ldg(reinterpret_cast<const float*>(p));
  }
};

template <>
struct Vec<uint16_t, 1> {
  __device__ static void load(const unsigned char* p, float* f) {
    f[0] = cxlpool::cuda::math::bf16_to_f32(__ldg(reinterpret_cast<const unsigned short*>(p)));
  }
};

// One token's share of a lane: kMaxElems elements of K or V. bf16 rows read
// with 16-byte loads stay packed (4 registers for 8 values) until used, so a
// warp can keep twice as many bf16 tokens in flight in the same registers.
template <typename T, bool kVector>
struct Tile {
  static constexpr unsigned kVec = kVector ? 16 / sizeof(T) : 1;
  float f[kMaxElems];
  __device__ void clear() {
#pragma unroll
    for (unsigned i = 0; i < kMaxElems; ++i) f[i] = 0.0f;
  }
  // Elements (j + mm * lanes) * kVec + c of the head row at `row`.
  __device__ void load(const unsigned char* row, unsigned j, unsigned lanes, unsigned head_dim) {
#pragma unroll
    for (unsigned mm = 0; mm < kMaxElems / kVec; ++mm) {
      const unsigned e = (j + mm * lanes) * kVec;
      if (e < head_dim) Vec<T, kVec>::load(row + e * sizeof(T), &f[mm * kVec]);
    }
  }
  __device__ float at(unsigned i) const { return f[i]; }
};

template <>
struct Tile<uint16_t, true> {
  uint4 raw;
  __device__ void clear() { raw = make_uint4(0, 0, 0, 0); }
  __device__ void load(const unsigned char* row, unsigned j, unsigned, unsigned head_dim) {
    const unsigned e = j * 8;
    if (e < head_dim) raw = __ldg(reinterpret_cast<const uint4*>(row + e * sizeof(uint16_t)));
  }
  __device__ float at(unsigned i) const {
    const unsigned w = i / 2 == 0 ? raw.x : i / 2 == 1 ? raw.y : i / 2 == 2 ? raw.z : raw.w;
    return __uint_as_float(i % 2 == 0 ? w << 16 : w & 0xFFFF0000u);  // bf16 = upper half of an f32
  }
};

// Token slots a warp loads per loop step: packed bf16 tiles take half the
// registers of f32 ones, so twice as many fit.
template <typename T, bool kVector>
__host__ __device__ constexpr unsigned unroll_of() {
  return sizeof(T) == 2 && kVector ? cxlpool::cuda::kAttentionUnrollPacked : kUnroll;
}

using cxlpool::cuda::attention::ContiguousAddr;
using cxlpool::cuda::attention::kNoToken;
using cxlpool::cuda::attention::PagedAddr;

// The fused reduce: every block of a (row, head chunk) that wrote a partial
// counts itself done; the last one to do so combines the `used` partials of
// its heads into the output (as cxlpool_decode_attention_reduce does) and
// resets the count for the next launch. A small call then costs one launch
// and no second kernel's start and drain. The partials of other blocks are
// read past L1 (__ldcg): L1 is not coherent across SMs.
__device__ void combine_if_last(const DecodeAttentionParams& p, unsigned row, unsigned h0,
                                unsigned nh, unsigned used) {
  __shared__ bool s_last;
  __shared__ float s_w[kHeads][kMaxSplits];
  __shared__ float s_total[kHeads];
  __threadfence();  // this block's partial, visible device-wide before it counts
  __syncthreads();
  if (threadIdx.x == 0) {
    uint32_t* count =
        reinterpret_cast<uint32_t*>(p.done_counts) + static_cast<uint64_t>(row) * gridDim.x + blockIdx.x;
    const uint32_t before = atomicAdd(count, 1u);
    s_last = before + 1 == used;
    if (s_last) atomicExch(count, 0u);
  }
  __syncthreads();
  if (!s_last) return;
  __threadfence();  // the other blocks' partials, read after their counts

  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const float* ml = reinterpret_cast<const float*>(p.part_ml);
  const float* part = reinterpret_cast<const float*>(p.part_acc);
  // One warp a head: the splits' weights 2^(max_s - max) and their sum.
  for (unsigned hh = warp; hh < nh; hh += kWarps) {
    const uint64_t rec0 = (static_cast<uint64_t>(row) * p.q_heads + h0 + hh) * p.n_splits;
    float mx = -INFINITY;
    for (unsigned s = lane; s < used; s += 32) mx = fmaxf(mx, __ldcg(ml + 2 * (rec0 + s)));
#pragma unroll
    for (unsigned o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, o));
    const float b = safe_base(mx);
    float total = 0.0f;
    for (unsigned s = lane; s < used; s += 32) {
      const float w = exp2f(__ldcg(ml + 2 * (rec0 + s)) - b);
      s_w[hh][s] = w;
      total += __ldcg(ml + 2 * (rec0 + s) + 1) * w;
    }
#pragma unroll
    for (unsigned o = 16; o > 0; o /= 2) total += __shfl_xor_sync(0xFFFFFFFFu, total, o);
    if (lane == 0) s_total[hh] = total;
  }
  __syncthreads();
  const unsigned head_dim = p.head_dim;
  float* out = reinterpret_cast<float*>(p.out);
  for (unsigned i = threadIdx.x; i < nh * head_dim; i += kThreads) {
    const unsigned hh = i / head_dim;
    const unsigned d = i % head_dim;
    const uint64_t head = static_cast<uint64_t>(row) * p.q_heads + h0 + hh;
    const uint64_t rec0 = head * p.n_splits;
    float a = 0.0f;
    for (unsigned s = 0; s < used; ++s) a = fmaf(__ldcg(part + (rec0 + s) * head_dim + d), s_w[hh][s], a);
    const float total = s_total[hh];
    out[head * head_dim + d] = total > 0.0f ? a / total : 0.0f;
  }
}

// kLanes: token_lanes when known at compile time (the common head sizes),
// 0 to read it from the parameters.
template <typename T, bool kVector, unsigned kLanes, typename Addr>
__device__ void attend_split(const DecodeAttentionParams& p, const Addr& addr) {
  constexpr unsigned kVec = kVector ? 16 / sizeof(T) : 1;
  constexpr unsigned kLoads = kMaxElems / kVec;  // load slots per lane per token
  constexpr unsigned kSlots = unroll_of<T, kVector>();

  __shared__ float s_acc[kWarps][kHeads][kMaxHeadDim];
  __shared__ float s_m[kWarps][kHeads];
  __shared__ float s_l[kWarps][kHeads];

  cxlpool::cuda::attention::BlockWork w;
  if (!cxlpool::cuda::attention::start_block(p, &w)) return;
  const unsigned row = w.row, split = w.split, kv = w.kv, h0 = w.h0, nh = w.nh;
  const unsigned begin = w.begin, end = w.end;
  const unsigned head_dim = p.head_dim;

  const unsigned lanes = kLanes != 0 ? kLanes : p.token_lanes;
  const unsigned lane = threadIdx.x % 32;
  const unsigned warp = threadIdx.x / 32;
  const unsigned j = lane & (lanes - 1);
  const unsigned sub = lane / lanes;
  const unsigned tpw = 32 / lanes;
  const unsigned char* k = reinterpret_cast<const unsigned char*>(p.k);
  const unsigned char* v = reinterpret_cast<const unsigned char*>(p.v);
  const uint64_t head_off = static_cast<uint64_t>(kv) * head_dim * sizeof(T);

  float q[kHeads][kMaxElems];
  float acc[kHeads][kMaxElems];
  float m[kHeads];
  float l[kHeads];
  const float* qrow = reinterpret_cast<const float*>(p.q) +
                      (static_cast<uint64_t>(row) * p.q_heads + h0) * head_dim;
#pragma unroll
  for (unsigned hh = 0; hh < kHeads; ++hh) {
#pragma unroll
    for (unsigned mm = 0; mm < kLoads; ++mm) {
#pragma unroll
      for (unsigned c = 0; c < kVec; ++c) {
        const unsigned e = (j + mm * lanes) * kVec + c;
        q[hh][mm * kVec + c] =
            hh < nh && e < head_dim ? qrow[hh * head_dim + e] * p.scale_log2 : 0.0f;
        acc[hh][mm * kVec + c] = 0.0f;
      }
    }
    m[hh] = -INFINITY;
    l[hh] = 0.0f;
  }

  // Paged layout with the lane count known: the table lookups of a loop step
  // are done one token per lane (the step's tokens are consecutive and fit
  // in a warp), one step ahead, and reach the token's lanes by shuffle. A
  // lookup per token slot in the step itself puts a dependent table load
  // before every K/V load; ahead of time, the step's K/V loads issue at once.
  constexpr unsigned kWindow = kLanes != 0 ? 32 / kLanes * kSlots : 0;  // tokens per warp step
  constexpr bool kAhead = Addr::kPaged && kWindow != 0 && kWindow <= 32;
  unsigned skipped_here = 0;  // tokens this lane looked up ahead and found outside the pool
  const unsigned step = kWarps * tpw * kSlots;
  const unsigned first = begin + warp * tpw * kSlots;
  uint32_t next = kNoToken;
  if constexpr (kAhead) {
    next = addr.index(row, lane < kWindow ? first + lane : end, end, &skipped_here);
  }
  for (unsigned base = first; base < end; base += step) {
    uint32_t ahead = kNoToken;
    if constexpr (kAhead) {
      ahead = next;
      next = addr.index(row, lane < kWindow ? base + step + lane : end, end, &skipped_here);
    }
    Tile<T, kVector> kt[kSlots];
    Tile<T, kVector> vt[kSlots];
    bool ok[kSlots];
    // Every load of the step first, then the arithmetic. Zeros, then
    // predicated loads: no branch in the loop body.
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) {
      const unsigned t = base + u * tpw + sub;
      uint64_t off = 0;
      if constexpr (kAhead) {
        const uint32_t at = __shfl_sync(0xFFFFFFFFu, ahead, u * tpw + sub);
        ok[u] = at != kNoToken;
        off = uint64_t{at} * addr.token_bytes;
      } else {
        ok[u] = t < end;
        if (ok[u] && !addr.offset(row, t, &off)) {
          ok[u] = false;
          // Once per token (lane 0 of its group), once per query head.
          if (j == 0 && p.skipped != 0) atomicAdd(reinterpret_cast<uint32_t*>(p.skipped), nh);
        }
      }
      kt[u].clear();
      vt[u].clear();
      if (ok[u]) {
        kt[u].load(k + off + head_off, j, lanes, head_dim);
        vt[u].load(v + off + head_off, j, lanes, head_dim);
      }
    }
    float s[kSlots][kHeads];
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) {
      float kf[kMaxElems];
#pragma unroll
      for (unsigned i = 0; i < kMaxElems; ++i) kf[i] = kt[u].at(i);
#pragma unroll
      for (unsigned hh = 0; hh < kHeads; ++hh) {
        float dot = 0.0f;
#pragma unroll
        for (unsigned i = 0; i < kMaxElems; ++i) dot = fmaf(q[hh][i], kf[i], dot);
#pragma unroll
        for (unsigned o = 16; o > 0; o /= 2) {
          if constexpr (kLanes != 0) {
            // Known lanes: exactly log2(lanes) levels.
            if (o < kLanes) dot += __shfl_xor_sync(0xFFFFFFFFu, dot, o);
          } else {
            // Every level is shuffled and the ones past the token's lanes
            // are dropped with a select: a shuffle under a run-time branch
            // costs a branch and a reconvergence per level.
            const float other = __shfl_xor_sync(0xFFFFFFFFu, dot, o);
            dot += o < lanes ? other : 0.0f;
          }
        }
        s[u][hh] = ok[u] ? dot : -INFINITY;
      }
    }
    cxlpool::cuda::attention::online_softmax_step(m, l, acc, s);
#pragma unroll
    for (unsigned u = 0; u < kSlots; ++u) {
#pragma unroll
      for (unsigned i = 0; i < kMaxElems; ++i) {
        const float vi = vt[u].at(i);
#pragma unroll
        for (unsigned hh = 0; hh < kHeads; ++hh) acc[hh][i] = fmaf(s[u][hh], vi, acc[hh][i]);
      }
#pragma unroll
      for (unsigned hh = 0; hh < kHeads; ++hh) l[hh] += s[u][hh];
    }
  }

  // Looked up ahead: counted once per lane that saw any, not in the loop
  // body. Each skipped token counts once per query head.
  if (kAhead && skipped_here != 0 && p.skipped != 0) {
    atomicAdd(reinterpret_cast<uint32_t*>(p.skipped), skipped_here * nh);
  }

  // The warp's lane groups hold the same dims of different tokens: merge
  // them into the lanes of group 0.
  cxlpool::cuda::attention::merge_lane_groups(m, l, acc, lanes);
  if (sub == 0) {
#pragma unroll
    for (unsigned hh = 0; hh < kHeads; ++hh) {
#pragma unroll
      for (unsigned mm = 0; mm < kLoads; ++mm) {
#pragma unroll
        for (unsigned c = 0; c < kVec; ++c) {
          const unsigned e = (j + mm * lanes) * kVec + c;
          if (e < head_dim) s_acc[warp][hh][e] = acc[hh][mm * kVec + c];
        }
      }
      if (lane == 0) {
        s_m[warp][hh] = m[hh];
        s_l[warp][hh] = l[hh];
      }
    }
  }
  __syncthreads();

  cxlpool::cuda::attention::write_block_result<kMaxHeadDim>(p, row, h0, nh, split, s_acc, s_m, s_l);
  if (p.n_splits > 1 && p.fused_reduce != 0) combine_if_last(p, row, h0, nh, splits_used(w.len, p));
}

template <typename T, bool kVector, unsigned kLanes>
__device__ void contiguous(const DecodeAttentionParams& p) {
  attend_split<T, kVector, kLanes>(p, cxlpool::cuda::attention::contiguous_addr<T>(p));
}

template <typename T, bool kVector, unsigned kLanes>
__device__ void paged(const DecodeAttentionParams& p) {
  attend_split<T, kVector, kLanes>(p, cxlpool::cuda::attention::paged_addr<T>(p));
}

}  // namespace

// At most 168 registers, so that 3 blocks (12 warps, each with 4 (f32) or 8
// (bf16) token slots of 16-byte K and V loads in flight) share an SM.
#define CXLPOOL_ATTENTION_KERNEL(name, layout, type, vector, lanes)               \
  extern "C" __global__ void __launch_bounds__(kThreads, 3)                       \
      name(const DecodeAttentionParams p) {                                        \
    layout<type, vector, lanes>(p);                                                \
  }

// Scalar loads, any head size; 16-byte loads, any head size; 16-byte loads
// with 16 lanes per token (head_dim 65..128), which the launcher picks
// whenever token_lanes is 16.
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_f32, contiguous, float, false, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_f32_vec, contiguous, float, true, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_f32_vec16, contiguous, float, true, 16)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_bf16, contiguous, uint16_t, false, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_bf16_vec, contiguous, uint16_t, true, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_bf16_vec16, contiguous, uint16_t, true, 16)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_f32, paged, float, false, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_f32_vec, paged, float, true, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_f32_vec16, paged, float, true, 16)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_bf16, paged, uint16_t, false, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_bf16_vec, paged, uint16_t, true, 0)
CXLPOOL_ATTENTION_KERNEL(cxlpool_decode_attention_paged_bf16_vec16, paged, uint16_t, true, 16)

// One block per (query head, row): combines the row's split partials,
// weighting each by 2^(its max - the overall max).
extern "C" __global__ void __launch_bounds__(cxlpool::cuda::kAttentionReduceThreads)
    cxlpool_decode_attention_reduce(const DecodeAttentionParams p) {
  __shared__ float s_w[kMaxSplits];
  __shared__ float s_total;
  wait_for_previous_grid();  // the partials of the main kernel
  let_next_grid_launch();
  const unsigned h = blockIdx.x;
  const unsigned row = blockIdx.y;
  const unsigned head_dim = p.head_dim;
  const unsigned len = reinterpret_cast<const uint32_t*>(p.seq_lens)[row];
  const unsigned used = splits_used(len, p);
  const uint64_t head = static_cast<uint64_t>(row) * p.q_heads + h;
  const uint64_t rec0 = head * p.n_splits;
  const float* ml = reinterpret_cast<const float*>(p.part_ml) + 2 * rec0;
  const float* part = reinterpret_cast<const float*>(p.part_acc) + rec0 * head_dim;

  float mx = -INFINITY;
  for (unsigned s = 0; s < used; ++s) mx = fmaxf(mx, ml[2 * s]);
  const float b = safe_base(mx);
  for (unsigned s = threadIdx.x; s < used; s += blockDim.x) s_w[s] = exp2f(ml[2 * s] - b);
  __syncthreads();
  if (threadIdx.x == 0) {
    float total = 0.0f;
    for (unsigned s = 0; s < used; ++s) total += ml[2 * s + 1] * s_w[s];
    s_total = total;
  }
  __syncthreads();
  const float total = s_total;
  float* out = reinterpret_cast<float*>(p.out) + head * head_dim;
  for (unsigned d = threadIdx.x; d < head_dim; d += blockDim.x) {
    float a = 0.0f;
    for (unsigned s = 0; s < used; ++s) a = fmaf(part[static_cast<uint64_t>(s) * head_dim + d], s_w[s], a);
    out[d] = total > 0.0f ? a / total : 0.0f;
  }
}
