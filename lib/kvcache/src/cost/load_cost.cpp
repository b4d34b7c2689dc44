// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/load_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace cxlpool::kvcache {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool usable_rate(double v) { return std::isfinite(v) && v >= 0; }

// Query heads per rank must be whole; KV heads either split or replicate.
Result<std::uint64_t> kv_heads_per_rank(const ModelShape& s) {
  if (s.kv_heads == 0 || s.tp == 0) return fail(EINVAL, "model shape: kv_heads and tp must be > 0");
  if (s.kv_heads % s.tp == 0) return std::uint64_t{s.kv_heads / s.tp};
  if (s.tp % s.kv_heads == 0) return std::uint64_t{1};
  return fail(EINVAL, "model shape: kv_heads " + std::to_string(s.kv_heads) + " and tp " +
                          std::to_string(s.tp) + " do not divide each other");
}

Result<void> validate_flops_shape(const ModelShape& s) {
  if (s.layers == 0 || s.hidden == 0 || s.head_dim == 0 || s.ffn_hidden == 0)
    return fail(EINVAL, "FLOPs rate: layers, hidden, head_dim and ffn_hidden must be > 0");
  auto heads = kv_heads_per_rank(s);
  if (!heads) return tl::unexpected(heads.error());
  return {};
}

Result<void> validate_rate(const ComputeRate& r) {
  if (!usable_rate(r.tokens_per_s) || !usable_rate(r.flops_per_s))
    return fail(EINVAL, "compute rate must be finite and >= 0");
  const bool tokens = r.tokens_per_s > 0;
  const bool flops = r.flops_per_s > 0;
  if (tokens == flops)
    return fail(EINVAL, tokens ? "compute rate: give tokens_per_s or flops_per_s, not both"
                               : "compute rate: tokens_per_s or flops_per_s must be > 0");
  if (flops) return validate_flops_shape(r.shape);
  return {};
}

// The rate is already validated.
double recompute_unchecked(const ComputeRate& r, std::uint64_t first, std::uint64_t end) {
  const double n = static_cast<double>(end - first);
  if (r.tokens_per_s > 0) return n / r.tokens_per_s;
  const ModelShape& s = r.shape;
  const double h = s.hidden;
  const double kv_dim = static_cast<double>(s.kv_heads) * s.head_dim;
  const double weights = static_cast<double>(s.layers) *
                         (2.0 * h * h + 2.0 * h * kv_dim + 3.0 * h * s.ffn_hidden);
  const double a = static_cast<double>(first);
  const double p = static_cast<double>(end);
  // Sum of (pos + 1) for pos in [first, end).
  const double positions = (p * (p + 1.0) - a * (a + 1.0)) / 2.0;
  const double flops = n * 2.0 * weights + 4.0 * s.layers * h * positions;
  return flops / s.tp / r.flops_per_s;
}

double combine(const LoadCostConfig& c, double load, double compute) {
  if (!c.overlap) return load + compute;
  const double hi = std::max(load, compute);
  const double lo = std::min(load, compute);
  if (c.pipeline_stages == 0 || std::isinf(hi)) return hi;
  return hi + lo / c.pipeline_stages;
}

double chunk_load_seconds(const TierRates& t, const CachedChunk& chunk) {
  const auto i = static_cast<std::size_t>(chunk.tier);
  double bw = t.bandwidth_bps[i];
  if (bw == 0) return kInf;
  if (t.link_bps > 0) bw = std::min(bw, t.link_bps);
  return t.latency_s[i] + static_cast<double>(chunk.bytes) / bw;
}

}  // namespace

Result<std::uint64_t> kv_bytes_per_token(const ModelShape& s) {
  if (s.layers == 0 || s.head_dim == 0 || s.dtype_bytes == 0)
    return fail(EINVAL, "model shape: layers, head_dim and dtype_bytes must be > 0");
  auto heads = kv_heads_per_rank(s);
  if (!heads) return tl::unexpected(heads.error());
  // Each factor is < 2^32; check every step of the product.
  std::uint64_t v = 2;
  for (std::uint64_t f : {std::uint64_t{s.layers}, *heads, std::uint64_t{s.head_dim},
                          std::uint64_t{s.dtype_bytes}}) {
    if (v > std::numeric_limits<std::uint64_t>::max() / f)
      return fail(ERANGE, "KV bytes per token overflow 64 bits");
    v *= f;
  }
  return v;
}

Result<void> validate(const LoadCostConfig& c) {
  for (std::size_t i = 0; i < kKvTierCount; ++i) {
    const auto tier = std::string(to_string(static_cast<KvTier>(i)));
    if (!usable_rate(c.tiers.bandwidth_bps[i]))
      return fail(EINVAL, tier + " bandwidth must be finite and >= 0");
    if (!usable_rate(c.tiers.latency_s[i]))
      return fail(EINVAL, tier + " latency must be finite and >= 0");
  }
  if (!usable_rate(c.tiers.link_bps)) return fail(EINVAL, "link bandwidth must be finite and >= 0");
  return validate_rate(c.compute);
}

Result<double> recompute_seconds(const ComputeRate& rate, std::uint64_t first,
                                 std::uint64_t end) {
  if (auto ok = validate_rate(rate); !ok) return tl::unexpected(ok.error());
  if (first > end) return fail(EINVAL, "recompute range: first > end");
  const double t = recompute_unchecked(rate, first, end);
  if (!std::isfinite(t)) return fail(ERANGE, "recompute time overflows");
  return t;
}

Result<LoadDecision> decide_load(const LoadCostConfig& c, const LoadCostRequest& req) {
  if (auto ok = validate(c); !ok) return tl::unexpected(ok.error());
  const std::size_t n = req.chunks.size();
  if (n > 0 && req.chunk_tokens == 0) return fail(EINVAL, "chunk_tokens must be > 0");
  // n * chunk_tokens can exceed 64 bits only when n does not fit in memory
  // anyway, but check rather than wrap.
  if (n > 0 && n > req.prompt_tokens / req.chunk_tokens)
    return fail(EINVAL, "cached prefix (" + std::to_string(n) + " chunks of " +
                            std::to_string(req.chunk_tokens) +
                            " tokens) is longer than the prompt (" +
                            std::to_string(req.prompt_tokens) + " tokens)");
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<std::size_t>(req.chunks[i].tier) >= kKvTierCount)
      return fail(EINVAL, "chunk " + std::to_string(i) + ": unknown tier");
    if (req.chunks[i].bytes == 0)
      return fail(EINVAL, "chunk " + std::to_string(i) + ": zero bytes");
  }

  const std::uint64_t p = req.prompt_tokens;
  LoadDecision d;
  d.full_recompute_s = recompute_unchecked(c.compute, 0, p);
  if (!std::isfinite(d.full_recompute_s)) return fail(ERANGE, "recompute time overflows");
  d.recompute_tokens = p;
  d.recompute_s = d.full_recompute_s;
  d.time_s = d.full_recompute_s;
  d.load_all_s = d.full_recompute_s;

  double load = 0;
  for (std::size_t k = 1; k <= n; ++k) {
    load += chunk_load_seconds(c.tiers, req.chunks[k - 1]);
    const std::uint64_t first = static_cast<std::uint64_t>(k) * req.chunk_tokens;
    const double compute = recompute_unchecked(c.compute, first, p);
    const double t = combine(c, load, compute);
    if (k == n) d.load_all_s = t;
    if (t < d.time_s) {
      d.load_chunks = k;
      d.recompute_tokens = p - first;
      d.load_s = load;
      d.recompute_s = compute;
      d.time_s = t;
    }
    // Once loading alone costs more than the best plan, no longer prefix
    // can win (T(k) >= L(k) and L never shrinks); only load_all_s is left.
    if (load >= d.time_s && k < n) {
      double rest = load;
      for (std::size_t j = k; j < n; ++j) rest += chunk_load_seconds(c.tiers, req.chunks[j]);
      const std::uint64_t cached = n * std::uint64_t{req.chunk_tokens};
      d.load_all_s = combine(c, rest, recompute_unchecked(c.compute, cached, p));
      break;
    }
  }
  d.should_load = d.load_chunks > 0;
  return d;
}

}  // namespace cxlpool::kvcache
