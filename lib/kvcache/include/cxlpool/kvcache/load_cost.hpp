// SPDX-License-Identifier: Apache-2.0
#pragma once
// Recompute or load: for a prompt of P tokens whose first C tokens are cached
// as n chunks of `chunk_tokens` spread over the tiers, decide how many leading
// chunks to load and how many tokens to recompute. Loading is a prefix: chunk
// i is usable only when chunks 0..i-1 are, so the decision is a cut-off k in
// [0, n]: chunks [0, k) are loaded, tokens [k * chunk_tokens, P) recomputed.
//
// Costs (seconds):
//   load(chunk i)  = latency[tier] + bytes / min(bandwidth[tier], link)
//                    (link = 0 means no cap; bandwidth 0 = tier unavailable,
//                    its load time is +inf, so the cut-off stops before it)
//   L(k)           = sum of load(chunk i) for i < k  (chunks read one after
//                    another: latency is paid per chunk, not hidden by depth)
//   R(k)           = time to recompute tokens [k * chunk_tokens, P), either
//     tokens/s:     (P - k * chunk_tokens) / tokens_per_s
//     FLOPs/s:      sum over positions p in [a, P) of
//                     (2 * W + 4 * layers * hidden * (p + 1)) / tp
//                   divided by flops_per_s, where W = weights touched per
//                   token = layers * (2 * hidden^2 + 2 * hidden * kv_heads *
//                   head_dim + 3 * hidden * ffn_hidden) (gated MLP) and the
//                   second term is causal attention (QK^T and AV) over the
//                   p + 1 positions a token at position p sees; the sum has
//                   the closed form (P - a) * 2W + 4 * layers * hidden *
//                   (P(P+1) - a(a+1)) / 2.
//   T(k), no overlap:        L(k) + R(k)
//   T(k), overlap (layer-wise pipelining: layer l's KV is read while layer
//         l-1 computes):     max(L(k), R(k)) + min(L(k), R(k)) / S
//         with S = pipeline_stages (usually the layer count): the pipeline
//         fill, one stage of the shorter side that cannot be hidden. S = 0
//         means an ideal pipeline (pure max); S = 1 degenerates to the sum.
// The chosen k minimises T(k) over all k in [0, n] (exhaustive, O(n); ties go
// to the smaller k: less I/O for the same time). Full recompute is T(0) = R(0).
// Faster compute never increases k and more bandwidth never decreases it.
// With overlap, k can stop short of a fast tier's last chunk: once loading is
// the bottleneck, recomputing the last chunks while the rest loads is faster
// than leaving the GPU waiting for I/O.
//
// Worked example (Llama-2-7B, fp16, tp 1): KV bytes per token = 32 layers x 2
// x 32 kv heads x 128 head dim x 2 B = 512 KiB; a 256-token chunk is 128 MiB.
// Client declares 10000 prefill tokens/s; P = 4096, all 16 chunks cached.
//   DRAM at 20e9 B/s: load(chunk) = 6.71 ms < 25.6 ms to recompute its 256
//     tokens, so without overlap T(k) = 409.6 ms - 18.89 ms * k: k = 16,
//     107.4 ms instead of 409.6 ms.
//   SSD at 2e9 B/s, 100 us per I/O: load(chunk) = 67.21 ms > 25.6 ms.
//     No overlap: T(k) = 409.6 ms + 41.61 ms * k, k = 0 (recompute all).
//     Overlap, S = 32: k = 4 gives max(268.8, 307.2) + 268.8 / 32 = 315.6 ms;
//     k = 3 gives 339.1 ms and k = 5 gives 344.8 ms, so the cut-off is 4.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/tier.hpp"

namespace cxlpool::kvcache {

// The model's shape as one tensor-parallel rank sees it. Query heads are
// hidden / head_dim (as in Llama and Mistral); kv_heads < that is GQA.
struct ModelShape {
  std::uint32_t layers = 0;
  std::uint32_t hidden = 0;       // model width
  std::uint32_t kv_heads = 0;     // key/value heads, whole model
  std::uint32_t head_dim = 0;
  std::uint32_t ffn_hidden = 0;   // MLP intermediate size (FLOPs rate only)
  std::uint32_t dtype_bytes = 2;  // KV element size
  std::uint32_t tp = 1;           // tensor-parallel ranks
};

// Bytes of KV one rank stores per token: layers x 2 (K and V) x kv heads per
// rank x head_dim x dtype_bytes. KV heads per rank are kv_heads / tp, or 1
// when tp > kv_heads (each rank then holds a replica of one head).
// EINVAL: a zero field, or neither kv_heads nor tp divides the other.
// ERANGE: the product does not fit in 64 bits.
[[nodiscard]] Result<std::uint64_t> kv_bytes_per_token(const ModelShape& shape);

// The compute rate the client declares: exactly one of tokens_per_s (measured
// prefill throughput) or flops_per_s (effective FLOP/s of one rank, i.e. peak
// times the utilisation the client expects) is positive; flops_per_s needs
// every shape field except dtype_bytes.
struct ComputeRate {
  double tokens_per_s = 0;
  double flops_per_s = 0;
  ModelShape shape;
};

// Measured tier speeds, indexed by KvTier. Bandwidth in bytes/s to where the
// KV is consumed; 0 marks a tier unavailable. latency_s is added per chunk
// (mostly the SSD's per-I/O latency).
struct TierRates {
  std::array<double, kKvTierCount> bandwidth_bps{};
  std::array<double, kKvTierCount> latency_s{};
  double link_bps = 0;  // cap on every tier (e.g. host to GPU); 0: none
};

struct LoadCostConfig {
  TierRates tiers;
  ComputeRate compute;
  bool overlap = false;              // loading overlaps compute layer by layer
  std::uint32_t pipeline_stages = 0;  // S above; used only with overlap
};

struct CachedChunk {
  KvTier tier = KvTier::kDram;
  std::uint64_t bytes = 0;
};

struct LoadCostRequest {
  std::uint64_t prompt_tokens = 0;     // P
  std::uint32_t chunk_tokens = 256;    // tokens per cached chunk
  std::span<const CachedChunk> chunks; // the cached prefix, in order
};

struct LoadDecision {
  std::size_t load_chunks = 0;          // k: load chunks [0, k)
  bool should_load = false;             // k > 0: loading beats recomputing
  std::uint64_t recompute_tokens = 0;   // P - k * chunk_tokens
  double load_s = 0;                    // L(k)
  double recompute_s = 0;               // R(k)
  double time_s = 0;                    // T(k), the expected time
  double full_recompute_s = 0;          // T(0)
  double load_all_s = 0;                // T(n); +inf when a tier is unavailable
};

// Checks rates and the compute declaration. EINVAL: a negative or non-finite
// rate or latency, no compute rate or both, a FLOPs rate with a zero shape
// field (or kv_heads/tp not dividing either way).
[[nodiscard]] Result<void> validate(const LoadCostConfig& config);

// R for tokens [first, end) of a prompt. EINVAL: invalid rate, first > end.
// ERANGE: the time overflows a double.
[[nodiscard]] Result<double> recompute_seconds(const ComputeRate& rate, std::uint64_t first,
                                               std::uint64_t end);

// The decision. EINVAL: validate() fails, chunks without chunk_tokens, a
// zero-byte chunk, a tier value out of range, or more cached tokens than the
// prompt. ERANGE: full recompute time overflows a double. An empty prefix is
// not an error: k = 0, should_load false.
[[nodiscard]] Result<LoadDecision> decide_load(const LoadCostConfig& config,
                                               const LoadCostRequest& request);

}  // namespace cxlpool::kvcache
