// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/load_cost.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace cxlpool::kvcache {
namespace {

constexpr std::uint64_t kChunkBytes = 128ull << 20;  // 256 tokens of Llama-2-7B fp16
constexpr std::size_t kCxl = 1, kSsd = 2;  // indexes into the rate arrays

ModelShape llama2_7b() {
  ModelShape s;
  s.layers = 32;
  s.hidden = 4096;
  s.kv_heads = 32;
  s.head_dim = 128;
  s.ffn_hidden = 11008;
  s.dtype_bytes = 2;
  return s;
}

// 10000 prefill tokens/s; DRAM 20 GB/s; SSD 2 GB/s with 100 us per I/O.
LoadCostConfig tokens_config() {
  LoadCostConfig c;
  c.compute.tokens_per_s = 10000;
  c.tiers.bandwidth_bps = {20e9, 10e9, 2e9};
  c.tiers.latency_s = {0, 0, 100e-6};
  return c;
}

std::vector<CachedChunk> chunks_on(KvTier tier, std::size_t n, std::uint64_t bytes = kChunkBytes) {
  return std::vector<CachedChunk>(n, CachedChunk{tier, bytes});
}

LoadCostRequest request(std::uint64_t prompt, const std::vector<CachedChunk>& chunks, std::uint32_t chunk_tokens) {
  LoadCostRequest r;
  r.prompt_tokens = prompt;
  r.chunk_tokens = chunk_tokens;
  r.chunks = chunks;
  return r;
}

LoadDecision decide(const LoadCostConfig& c, std::uint64_t prompt,
                    const std::vector<CachedChunk>& chunks, std::uint32_t chunk_tokens = 256) {
  auto d = decide_load(c, request(prompt, chunks, chunk_tokens));
  EXPECT_TRUE(d.has_value()) << (d ? "" : d.error().message);
  return d ? *d : LoadDecision{};
}

int decide_error(const LoadCostConfig& c, std::uint64_t prompt,
                 const std::vector<CachedChunk>& chunks, std::uint32_t chunk_tokens = 256) {
  auto d = decide_load(c, request(prompt, chunks, chunk_tokens));
  return d ? 0 : d.error().code;
}

TEST(KvLoadCost, KvBytesPerToken) {
  EXPECT_EQ(*kv_bytes_per_token(llama2_7b()), 512u * 1024u);  // 32 x 2 x 32 x 128 x 2
  ModelShape l3 = llama2_7b();  // Llama-3-8B: GQA with 8 KV heads
  l3.kv_heads = 8;
  EXPECT_EQ(*kv_bytes_per_token(l3), 128u * 1024u);
  l3.tp = 2;
  EXPECT_EQ(*kv_bytes_per_token(l3), 64u * 1024u);
  l3.tp = 16;  // more ranks than KV heads: one replicated head per rank
  EXPECT_EQ(*kv_bytes_per_token(l3), 32u * 2u * 128u * 2u);
  l3.tp = 3;
  EXPECT_EQ(kv_bytes_per_token(l3).error().code, EINVAL);
  ModelShape zero = llama2_7b();
  zero.dtype_bytes = 0;
  EXPECT_EQ(kv_bytes_per_token(zero).error().code, EINVAL);
  ModelShape huge;
  huge.layers = huge.kv_heads = huge.head_dim = huge.dtype_bytes = 0xffffffffu;
  EXPECT_EQ(kv_bytes_per_token(huge).error().code, ERANGE);
}

TEST(KvLoadCost, RecomputeSecondsTokensAndFlops) {
  ComputeRate tok;
  tok.tokens_per_s = 10000;
  EXPECT_DOUBLE_EQ(*recompute_seconds(tok, 1024, 4096), 0.3072);
  ComputeRate fl;
  fl.flops_per_s = 1e14;
  fl.shape = llama2_7b();
  // W = 32 x (2 x 4096^2 + 2 x 4096 x 4096 + 3 x 4096 x 11008) = 6476005376
  // tokens [0, 2): 2 x 2W + 4 x 32 x 4096 x (1 + 2) flops.
  const double w = 6476005376.0;
  const double flops = 2 * 2 * w + 4.0 * 32 * 4096 * 3;
  EXPECT_DOUBLE_EQ(*recompute_seconds(fl, 0, 2), flops / 1e14);
  fl.shape.tp = 2;
  EXPECT_DOUBLE_EQ(*recompute_seconds(fl, 0, 2), flops / 2 / 1e14);
  EXPECT_DOUBLE_EQ(*recompute_seconds(fl, 7, 7), 0.0);
  EXPECT_EQ(recompute_seconds(fl, 8, 7).error().code, EINVAL);
  // The attention term makes later tokens dearer.
  EXPECT_GT(*recompute_seconds(fl, 100000, 100256), *recompute_seconds(fl, 0, 256));
}

// DRAM always pays for a realistic 7B: A100-class (150 TFLOP/s effective,
// PCIe gen4 25 GB/s) and H100-class (700 TFLOP/s, gen5 50 GB/s), every
// overlap mode, short and long prompts.
TEST(KvLoadCost, DramPrefixAlwaysLoadsFor7B) {
  struct Gpu {
    double flops, link;
  };
  for (Gpu g : {Gpu{150e12, 25e9}, Gpu{700e12, 50e9}}) {
    for (int mode = 0; mode < 3; ++mode) {
      for (std::size_t n : {1u, 4u, 16u, 64u}) {
        LoadCostConfig c;
        c.compute.flops_per_s = g.flops;
        c.compute.shape = llama2_7b();
        c.tiers.bandwidth_bps = {100e9, 0, 0};
        c.tiers.link_bps = g.link;
        c.overlap = mode > 0;
        c.pipeline_stages = mode == 2 ? 32 : 0;
        auto chunks = chunks_on(KvTier::kDram, n);
        const auto d = decide(c, n * 256 + 100, chunks);
        EXPECT_TRUE(d.should_load) << "flops " << g.flops << " mode " << mode;
        EXPECT_LT(d.time_s, d.full_recompute_s);
        EXPECT_LE(d.time_s, d.load_all_s);
        if (!c.overlap) {
          EXPECT_EQ(d.load_chunks, n) << "flops " << g.flops;
          EXPECT_EQ(d.recompute_tokens, 100u);
          EXPECT_DOUBLE_EQ(d.time_s, d.load_all_s);
        } else {
          // Pipelined, once the load is the bottleneck the last chunks are
          // recomputed while the rest loads. A chunk loads faster than it
          // recomputes, so L and R cross past the middle of the prefix.
          EXPECT_GE(d.load_chunks * 2, n) << "flops " << g.flops << " mode " << mode;
        }
      }
    }
  }
}

TEST(KvLoadCost, DramWorkedExample) {
  auto chunks = chunks_on(KvTier::kDram, 16);
  const auto d = decide(tokens_config(), 4096, chunks);
  EXPECT_EQ(d.load_chunks, 16u);
  EXPECT_EQ(d.recompute_tokens, 0u);
  EXPECT_NEAR(d.time_s, 16 * 0.0067108864, 1e-12);
  EXPECT_NEAR(d.full_recompute_s, 0.4096, 1e-12);
}

// The header's example: 16 chunks of 128 MiB on SSD at 2 GB/s + 100 us,
// 10000 tokens/s. load(chunk) = 0.067208864 s, R(k) = 0.4096 - 0.0256 k.
TEST(KvLoadCost, SsdPrefixCutAtComputableChunk) {
  auto chunks = chunks_on(KvTier::kSsd, 16);
  const double per_chunk = 0.067208864;
  LoadCostConfig c = tokens_config();

  // Sequential: every chunk costs more than recomputing it.
  auto d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 0u);
  EXPECT_FALSE(d.should_load);
  EXPECT_NEAR(d.time_s, 0.4096, 1e-12);
  EXPECT_NEAR(d.load_all_s, 16 * per_chunk, 1e-12);

  // Pipelined, S = 32: T(4) = 0.3072 + 4 x 0.067208864 / 32.
  c.overlap = true;
  c.pipeline_stages = 32;
  d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 4u);
  EXPECT_TRUE(d.should_load);
  EXPECT_EQ(d.recompute_tokens, 4096u - 1024u);
  EXPECT_NEAR(d.load_s, 4 * per_chunk, 1e-12);
  EXPECT_NEAR(d.recompute_s, 0.3072, 1e-12);
  EXPECT_NEAR(d.time_s, 0.3072 + 4 * per_chunk / 32, 1e-12);
  EXPECT_NEAR(d.full_recompute_s, 0.4096, 1e-12);

  // Ideal pipeline with 904 uncached tokens: R(k) = 0.5 - 0.0256 k crosses
  // L(k) between 5 and 6; T(5) = max(0.33604432, 0.372) = 0.372.
  c.pipeline_stages = 0;
  d = decide(c, 5000, chunks);
  EXPECT_EQ(d.load_chunks, 5u);
  EXPECT_NEAR(d.time_s, 0.372, 1e-12);

  // S = 1 is the sequential sum.
  c.pipeline_stages = 1;
  d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 0u);
}

// 8 DRAM chunks then 8 SSD chunks.
TEST(KvLoadCost, MixedTiersCutAtTierBoundary) {
  auto chunks = chunks_on(KvTier::kDram, 8);
  auto ssd = chunks_on(KvTier::kSsd, 8);
  chunks.insert(chunks.end(), ssd.begin(), ssd.end());
  LoadCostConfig c = tokens_config();

  auto d = decide(c, 4096, chunks);  // sequential: SSD never pays
  EXPECT_EQ(d.load_chunks, 8u);
  EXPECT_NEAR(d.time_s, 8 * 0.0067108864 + 0.2048, 1e-12);

  c.overlap = true;  // pipelined, slow SSD (0.5 GB/s): still the boundary
  c.pipeline_stages = 32;
  c.tiers.bandwidth_bps[kSsd] = 0.5e9;
  d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 8u);
  EXPECT_NEAR(d.time_s, 0.2048 + 8 * 0.0067108864 / 32, 1e-12);

  // Pipelined at 2 GB/s one SSD chunk hides behind compute:
  // T(9) = 0.1792 + (8 x 0.0067108864 + 0.067208864) / 32; T(10) is larger.
  c.tiers.bandwidth_bps[kSsd] = 2e9;
  d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 9u);
  EXPECT_NEAR(d.time_s, 0.1792 + (8 * 0.0067108864 + 0.067208864) / 32, 1e-12);
}

TEST(KvLoadCost, UnavailableTierStopsThePrefix) {
  auto chunks = chunks_on(KvTier::kDram, 3);
  auto cxl = chunks_on(KvTier::kCxl, 5);
  chunks.insert(chunks.end(), cxl.begin(), cxl.end());
  LoadCostConfig c = tokens_config();
  c.tiers.bandwidth_bps[kCxl] = 0;
  for (bool overlap : {false, true}) {
    c.overlap = overlap;
    auto d = decide(c, 4096, chunks);
    EXPECT_EQ(d.load_chunks, 3u);
    EXPECT_TRUE(std::isinf(d.load_all_s));
    EXPECT_TRUE(std::isfinite(d.time_s));
  }
  auto only_cxl = chunks_on(KvTier::kCxl, 4);
  auto d = decide(c, 1024, only_cxl);
  EXPECT_EQ(d.load_chunks, 0u);
  EXPECT_FALSE(d.should_load);
  EXPECT_NEAR(d.time_s, 0.1024, 1e-12);
}

// Pipelined with an ideal overlap, loading everything from DRAM leaves the
// GPU idle: 16 DRAM chunks at 6.7108864 ms, 10000 tokens/s, P = 4096.
// L(k) = 6.7108864 k ms, R(k) = 409.6 - 25.6 k ms; they cross at k = 12.63:
// T(12) = max(80.53, 102.4) = 102.4 ms, T(13) = max(87.24, 76.8) = 87.24 ms.
TEST(KvLoadCost, OverlapRecomputesTailWhileLoading) {
  auto chunks = chunks_on(KvTier::kDram, 16);
  LoadCostConfig c = tokens_config();
  c.overlap = true;
  const auto d = decide(c, 4096, chunks);
  EXPECT_EQ(d.load_chunks, 13u);
  EXPECT_EQ(d.recompute_tokens, 4096u - 13u * 256u);
  EXPECT_NEAR(d.time_s, 13 * 0.0067108864, 1e-12);
  EXPECT_NEAR(d.load_all_s, 16 * 0.0067108864, 1e-12);
}

TEST(KvLoadCost, LinkCapsEveryTier) {
  auto chunks = chunks_on(KvTier::kDram, 16);
  LoadCostConfig c = tokens_config();
  c.tiers.link_bps = 2e9;  // DRAM behind a slow link behaves like SSD
  EXPECT_EQ(decide(c, 4096, chunks).load_chunks, 0u);
  c.tiers.link_bps = 40e9;  // faster than DRAM: no effect
  EXPECT_NEAR(decide(c, 4096, chunks).time_s, 16 * 0.0067108864, 1e-12);
}

TEST(KvLoadCost, EmptyPrefix) {
  LoadCostConfig c = tokens_config();
  auto d = decide(c, 1000, {});
  EXPECT_EQ(d.load_chunks, 0u);
  EXPECT_FALSE(d.should_load);
  EXPECT_EQ(d.recompute_tokens, 1000u);
  EXPECT_NEAR(d.time_s, 0.1, 1e-12);
  EXPECT_NEAR(d.load_all_s, 0.1, 1e-12);
  d = decide(c, 0, {}, 0);
  EXPECT_EQ(d.time_s, 0.0);
  EXPECT_FALSE(d.should_load);
}

TEST(KvLoadCost, LargeValuesStayFinite) {
  LoadCostConfig c = tokens_config();
  c.compute = ComputeRate{};
  c.compute.flops_per_s = 1e15;
  c.compute.shape = llama2_7b();
  // 2^62 tokens: the quadratic attention term is ~1e37 FLOPs, fine in double.
  const std::uint64_t p = 1ull << 62;
  auto chunks = chunks_on(KvTier::kSsd, 3, std::numeric_limits<std::uint64_t>::max());
  auto d = decide(c, p, chunks, 0xffffffffu);
  EXPECT_TRUE(std::isfinite(d.time_s));
  EXPECT_TRUE(std::isfinite(d.full_recompute_s));
  EXPECT_LE(d.time_s, d.full_recompute_s);
  // A rate so small the time overflows is reported, not returned as inf.
  c.compute.flops_per_s = 1e-300;
  EXPECT_EQ(decide_error(c, p, chunks, 0xffffffffu), ERANGE);
}

TEST(KvLoadCost, RejectsBadInput) {
  auto chunks = chunks_on(KvTier::kDram, 2);
  LoadCostConfig c = tokens_config();
  c.compute.tokens_per_s = 0;  // no compute rate
  EXPECT_EQ(decide_error(c, 1024, chunks), EINVAL);
  EXPECT_EQ(decide_error(c, 0, {}), EINVAL);
  c.compute.tokens_per_s = -5;
  EXPECT_EQ(decide_error(c, 1024, chunks), EINVAL);
  c.compute.tokens_per_s = std::nan("");
  EXPECT_EQ(decide_error(c, 1024, chunks), EINVAL);
  c.compute.tokens_per_s = 1000;
  c.compute.flops_per_s = 1e12;  // both
  EXPECT_EQ(decide_error(c, 1024, chunks), EINVAL);
  c.compute.tokens_per_s = 0;  // FLOPs without a shape
  EXPECT_EQ(decide_error(c, 1024, chunks), EINVAL);
  c.compute.shape = llama2_7b();
  EXPECT_EQ(decide_error(c, 1024, chunks), 0);

  LoadCostConfig b = tokens_config();
  b.tiers.bandwidth_bps[kCxl] = -1;
  EXPECT_EQ(decide_error(b, 1024, chunks), EINVAL);
  b.tiers.bandwidth_bps[kCxl] = std::numeric_limits<double>::infinity();
  EXPECT_EQ(decide_error(b, 1024, chunks), EINVAL);
  b = tokens_config();
  b.tiers.latency_s[kSsd] = -1e-6;
  EXPECT_EQ(decide_error(b, 1024, chunks), EINVAL);
  b = tokens_config();
  b.tiers.link_bps = std::nan("");
  EXPECT_EQ(decide_error(b, 1024, chunks), EINVAL);

  LoadCostConfig ok = tokens_config();
  EXPECT_EQ(decide_error(ok, 1024, chunks, 0), EINVAL);  // chunks without a size
  EXPECT_EQ(decide_error(ok, 511, chunks), EINVAL);      // prefix longer than the prompt
  EXPECT_EQ(decide_error(ok, 512, chunks), 0);
  auto zero = chunks_on(KvTier::kDram, 1, 0);
  EXPECT_EQ(decide_error(ok, 512, zero), EINVAL);
  std::vector<CachedChunk> bad_tier{CachedChunk{static_cast<KvTier>(7), 1}};
  EXPECT_EQ(decide_error(ok, 512, bad_tier), EINVAL);
}

struct RandomCase {
  LoadCostConfig config;
  std::vector<CachedChunk> chunks;
  std::uint64_t prompt = 0;
};

RandomCase random_case(std::mt19937_64& rng) {
  auto log_uniform = [&](double lo, double hi) {
    return std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng));
  };
  RandomCase rc;
  LoadCostConfig& c = rc.config;
  for (std::size_t t = 0; t < kKvTierCount; ++t) {
    c.tiers.bandwidth_bps[t] = rng() % 10 == 0 ? 0 : log_uniform(1e8, 1e11);
    c.tiers.latency_s[t] = rng() % 2 ? 0 : log_uniform(1e-6, 1e-3);
  }
  if (rng() % 2) {
    c.compute.tokens_per_s = log_uniform(1e2, 1e6);
  } else {
    c.compute.flops_per_s = log_uniform(1e12, 1e16);
    c.compute.shape = llama2_7b();
  }
  c.overlap = rng() % 2;
  c.pipeline_stages = static_cast<std::uint32_t>(rng() % 3 == 0 ? 0 : rng() % 80 + 1);
  const std::size_t n = rng() % 40;
  for (std::size_t i = 0; i < n; ++i)
    rc.chunks.push_back(CachedChunk{static_cast<KvTier>(rng() % kKvTierCount),
                                    static_cast<std::uint64_t>(log_uniform(1e6, 1e9))});
  rc.prompt = n * 256 + rng() % 3000;
  return rc;
}

TEST(KvLoadCost, FasterComputeNeverLoadsMore) {
  std::mt19937_64 rng(42);
  int varied = 0;  // cases whose cut-off moves with the rate: the check bites
  for (int i = 0; i < 500; ++i) {
    RandomCase rc = random_case(rng);
    std::size_t prev = rc.chunks.size() + 1;
    std::size_t first = prev;
    for (double scale : {0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0}) {
      LoadCostConfig c = rc.config;
      c.compute.tokens_per_s *= scale;
      c.compute.flops_per_s *= scale;
      const auto d = decide(c, rc.prompt, rc.chunks);
      EXPECT_LE(d.load_chunks, prev) << "case " << i << " scale " << scale;
      EXPECT_LE(d.time_s, d.full_recompute_s);
      if (first > rc.chunks.size()) first = d.load_chunks;
      prev = d.load_chunks;
    }
    if (prev != first) ++varied;
  }
  EXPECT_GT(varied, 100);
}

TEST(KvLoadCost, MoreBandwidthNeverLoadsLess) {
  std::mt19937_64 rng(7);
  int varied = 0;
  for (int i = 0; i < 500; ++i) {
    RandomCase rc = random_case(rng);
    const std::size_t tier = rng() % (kKvTierCount + 1);  // kKvTierCount: all tiers
    std::size_t prev = 0;
    std::size_t first = rc.chunks.size() + 1;
    for (double scale : {0.0, 0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0}) {
      LoadCostConfig c = rc.config;
      for (std::size_t t = 0; t < kKvTierCount; ++t)
        if (t == tier || tier == kKvTierCount) c.tiers.bandwidth_bps[t] *= scale;
      const auto d = decide(c, rc.prompt, rc.chunks);
      EXPECT_GE(d.load_chunks, prev) << "case " << i << " scale " << scale;
      if (first > rc.chunks.size()) first = d.load_chunks;
      prev = d.load_chunks;
    }
    if (prev != first) ++varied;
  }
  EXPECT_GT(varied, 100);
}

}  // namespace
}  // namespace cxlpool::kvcache
