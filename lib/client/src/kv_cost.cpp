// SPDX-License-Identifier: Apache-2.0
#include <vector>

#include "kv_pure.hpp"

namespace cxlpool::client {

kvcache::TierRates kv_tier_rates(const cxlpool_kv_info& info) {
  kvcache::TierRates rates;
  for (size_t t = 0; t < kvcache::kKvTierCount; ++t) {
    rates.bandwidth_bps[t] = static_cast<double>(info.tier_bandwidth_bps[t]);
    rates.latency_s[t] = static_cast<double>(info.tier_latency_ns[t]) * 1e-9;
  }
  return rates;
}

Result<kvcache::LoadDecision> kv_decide_load(const kvcache::TierRates& rates, const cxlpool_kv_load_query& query) {
  if (query.n_chunks > 0 && query.chunks == nullptr) return fail(EINVAL, "query has chunks NULL");
  // Grows to the longest prefix seen on this thread, then stays: no
  // allocation per decision.
  thread_local std::vector<kvcache::CachedChunk> chunks;
  chunks.clear();
  chunks.reserve(query.n_chunks);
  for (uint32_t i = 0; i < query.n_chunks; ++i) {
    const cxlpool_kv_location& loc = query.chunks[i];
    if (loc.tier >= kvcache::kKvTierCount) {
      return fail(EINVAL, "chunk " + std::to_string(i) + " is on tier " + std::to_string(loc.tier) +
                              ", not a store tier");
    }
    chunks.push_back({static_cast<kvcache::KvTier>(loc.tier), loc.length});
  }
  kvcache::LoadCostConfig config;
  config.tiers = rates;
  config.compute.tokens_per_s = query.prefill_tokens_per_s;
  config.overlap = query.overlap != 0;
  config.pipeline_stages = query.pipeline_stages;
  kvcache::LoadCostRequest request;
  request.prompt_tokens = query.prompt_tokens;
  request.chunk_tokens = query.chunk_tokens;
  request.chunks = chunks;
  return kvcache::decide_load(config, request);
}

}  // namespace cxlpool::client
