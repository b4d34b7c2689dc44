// SPDX-License-Identifier: Apache-2.0
// The parts of the KV client API that need no daemon: chunk keys and the
// recompute-or-load decision. Both are lib/kvcache's own code (its keys
// library is linked into libcxlpool), so a key or a cut-off computed here is
// the one the daemon computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kv.h"
#include "cxlpool/kvcache/load_cost.hpp"
#include "cxlpool/kvcache/namespace.hpp"

namespace cxlpool::client {

// The kvcache form of a C namespace spec (chunk_tokens 0 becomes the
// default). EINVAL: a NULL or empty string, one longer than the wire allows,
// tp_size 0 or tp_rank >= tp_size.
Result<kvcache::NamespaceSpec> kv_namespace_spec(const cxlpool_kv_namespace_spec& spec);

// Keys of the full chunks of `tokens` chained from `parent` (NULL: a sequence
// start), written to `keys`. Returns how many. EINVAL: chunk_tokens 0;
// ENOSPC: `keys` too small; EOVERFLOW: more keys than an int can count.
// Allocation-free.
Result<size_t> kv_compute_keys(const cxlpool_kv_namespace& ns, std::span<const uint32_t> tokens,
                               const cxlpool_kv_key* parent, std::span<cxlpool_kv_key> keys);

// The tier rates a cxlpool_kv_info declares, in the cost model's units.
kvcache::TierRates kv_tier_rates(const cxlpool_kv_info& info);

// decide_load() for a C query against the given rates. EINVAL: a bad query
// (NULL chunks with n_chunks > 0, a chunk on the put window or an unknown
// tier, anything decide_load rejects).
Result<kvcache::LoadDecision> kv_decide_load(const kvcache::TierRates& rates, const cxlpool_kv_load_query& query);

}  // namespace cxlpool::client
