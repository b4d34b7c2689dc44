// SPDX-License-Identifier: Apache-2.0
// cxlpool_kv_should_load's decision is decide_load's for the tier rates the
// daemon announced: same cut-off, same times, same errors.
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <random>
#include <vector>

#include "cxlpool/kv.h"
#include "cxlpool/kvcache/load_cost.hpp"
#include "kv_pure.hpp"

namespace {

using cxlpool::kvcache::CachedChunk;
using cxlpool::kvcache::KvTier;
using cxlpool::kvcache::LoadDecision;

constexpr uint32_t kChunkBytes = 128u << 20;  // 256 tokens of Llama-2-7B fp16

// What the daemon announces in KvOpenReply: DRAM 20 GB/s, CXL 10 GB/s,
// SSD 2 GB/s with 100 us per I/O.
cxlpool_kv_info info_for_tests() {
  cxlpool_kv_info info{};
  info.tier_bandwidth_bps[0] = 20'000'000'000ull;
  info.tier_bandwidth_bps[1] = 10'000'000'000ull;
  info.tier_bandwidth_bps[2] = 2'000'000'000ull;
  info.tier_latency_ns[0] = 100;
  info.tier_latency_ns[1] = 300;
  info.tier_latency_ns[2] = 100'000;
  return info;
}

std::vector<cxlpool_kv_location> on_tier(uint16_t tier, size_t n, uint32_t bytes = kChunkBytes) {
  return std::vector<cxlpool_kv_location>(n, cxlpool_kv_location{nullptr, 0, bytes, tier, 0});
}

cxlpool_kv_load_query query(uint64_t prompt, const std::vector<cxlpool_kv_location>& chunks, double rate = 10000,
                            bool overlap = false, uint32_t stages = 0) {
  return cxlpool_kv_load_query{prompt, 256, rate, overlap ? 1 : 0, stages, chunks.data(),
                               static_cast<uint32_t>(chunks.size())};
}

LoadDecision client_decision(const cxlpool_kv_info& info, const cxlpool_kv_load_query& q) {
  auto d = cxlpool::client::kv_decide_load(cxlpool::client::kv_tier_rates(info), q);
  EXPECT_TRUE(d) << (d ? "" : d.error().message);
  return d ? *d : LoadDecision{};
}

TEST(ClientKvCost, RatesComeFromTheInfo) {
  const auto rates = cxlpool::client::kv_tier_rates(info_for_tests());
  EXPECT_EQ(rates.bandwidth_bps[0], 20e9);
  EXPECT_EQ(rates.bandwidth_bps[2], 2e9);
  EXPECT_DOUBLE_EQ(rates.latency_s[1], 300e-9);
  EXPECT_DOUBLE_EQ(rates.latency_s[2], 100e-6);
  EXPECT_EQ(rates.link_bps, 0);
}

// docs/kvstore.md's worked example.
TEST(ClientKvCost, WorkedExample) {
  const auto info = info_for_tests();
  const auto dram = on_tier(CXLPOOL_KV_TIER_DRAM, 16);
  const LoadDecision d = client_decision(info, query(4096, dram));
  EXPECT_EQ(d.load_chunks, 16u);
  EXPECT_TRUE(d.should_load);
  EXPECT_EQ(d.recompute_tokens, 0u);

  const auto ssd = on_tier(CXLPOOL_KV_TIER_SSD, 16);
  EXPECT_EQ(client_decision(info, query(4096, ssd)).load_chunks, 0u);
  const LoadDecision overlapped = client_decision(info, query(4096, ssd, 10000, true, 32));
  EXPECT_EQ(overlapped.load_chunks, 4u);
  EXPECT_EQ(overlapped.recompute_tokens, 4096u - 4 * 256);
}

// A sweep over tiers, rates, prompt lengths and overlap: the client's answer
// is exactly decide_load's for the same inputs.
TEST(ClientKvCost, MatchesDecideLoad) {
  std::mt19937 rng(42);
  for (int iter = 0; iter < 500; ++iter) {
    cxlpool_kv_info info{};
    for (int t = 0; t < 3; ++t) {
      info.tier_bandwidth_bps[t] = (rng() % 4 == 0) ? 0 : 1'000'000'000ull * (1 + rng() % 40);
      info.tier_latency_ns[t] = rng() % 200'000;
    }
    const size_t n = rng() % 40;
    std::vector<cxlpool_kv_location> chunks;
    std::vector<CachedChunk> ref_chunks;
    for (size_t i = 0; i < n; ++i) {
      const uint16_t tier = static_cast<uint16_t>(rng() % 3);
      const uint32_t bytes = 1 + rng() % kChunkBytes;
      chunks.push_back({nullptr, 0, bytes, tier, 0});
      ref_chunks.push_back({static_cast<KvTier>(tier), bytes});
    }
    const uint64_t prompt = n * 256 + rng() % 2000;
    const double rate = 100.0 + rng() % 50000;
    const bool overlap = rng() % 2 == 0;
    const uint32_t stages = rng() % 64;
    const cxlpool_kv_load_query q = query(prompt, chunks, rate, overlap, stages);

    cxlpool::kvcache::LoadCostConfig config;
    for (int t = 0; t < 3; ++t) {
      config.tiers.bandwidth_bps[t] = static_cast<double>(info.tier_bandwidth_bps[t]);
      config.tiers.latency_s[t] = static_cast<double>(info.tier_latency_ns[t]) * 1e-9;
    }
    config.compute.tokens_per_s = rate;
    config.overlap = overlap;
    config.pipeline_stages = stages;
    cxlpool::kvcache::LoadCostRequest request;
    request.prompt_tokens = prompt;
    request.chunk_tokens = 256;
    request.chunks = ref_chunks;
    auto ref = cxlpool::kvcache::decide_load(config, request);
    ASSERT_TRUE(ref) << ref.error().message;
    const LoadDecision got = client_decision(info, q);
    EXPECT_EQ(got.load_chunks, ref->load_chunks) << "iteration " << iter;
    EXPECT_EQ(got.should_load, ref->should_load);
    EXPECT_EQ(got.recompute_tokens, ref->recompute_tokens);
    EXPECT_EQ(got.time_s, ref->time_s);
    EXPECT_EQ(got.full_recompute_s, ref->full_recompute_s);
    if (std::isinf(ref->load_all_s)) {
      EXPECT_TRUE(std::isinf(got.load_all_s));
    } else {
      EXPECT_EQ(got.load_all_s, ref->load_all_s);
    }
  }
}

// An absent tier (bandwidth 0) stops the cut-off before its first chunk.
TEST(ClientKvCost, AbsentTierStopsThePrefix) {
  auto info = info_for_tests();
  info.tier_bandwidth_bps[1] = 0;
  auto chunks = on_tier(CXLPOOL_KV_TIER_DRAM, 4);
  const auto cxl = on_tier(CXLPOOL_KV_TIER_CXL, 4);
  chunks.insert(chunks.end(), cxl.begin(), cxl.end());
  const LoadDecision d = client_decision(info, query(8 * 256, chunks));
  EXPECT_EQ(d.load_chunks, 4u);
  EXPECT_TRUE(std::isinf(d.load_all_s));
}

TEST(ClientKvCost, Errors) {
  const auto rates = cxlpool::client::kv_tier_rates(info_for_tests());
  auto code = [&](const cxlpool_kv_load_query& q) {
    auto d = cxlpool::client::kv_decide_load(rates, q);
    return d ? 0 : d.error().code;
  };
  const auto window = on_tier(CXLPOOL_KV_TIER_PUT_WINDOW, 2);
  EXPECT_EQ(code(query(1024, window)), EINVAL);  // the put window is not a tier
  auto ok = on_tier(CXLPOOL_KV_TIER_DRAM, 2);
  EXPECT_EQ(code(query(1024, ok)), 0);
  EXPECT_EQ(code(query(1024, ok, 0)), EINVAL);      // no compute rate
  EXPECT_EQ(code(query(1024, ok, -5)), EINVAL);
  EXPECT_EQ(code(query(100, ok)), EINVAL);          // more cached than the prompt
  cxlpool_kv_load_query null_chunks = query(1024, ok);
  null_chunks.chunks = nullptr;
  EXPECT_EQ(code(null_chunks), EINVAL);
  const auto empty = on_tier(CXLPOOL_KV_TIER_DRAM, 0);
  const LoadDecision none = client_decision(info_for_tests(), query(1024, empty));
  EXPECT_EQ(none.load_chunks, 0u);
  EXPECT_FALSE(none.should_load);
  cxlpool_kv_load_decision out{};
  const cxlpool_kv_load_query q = query(1024, ok);
  EXPECT_EQ(cxlpool_kv_should_load(nullptr, &q, &out), -EINVAL);
}

}  // namespace
