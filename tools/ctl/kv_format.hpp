// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl kv ...` output: the KV store's replies as JSON and as text
// tables. Pure functions of the replies, so their shape is unit-tested.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::ctl {

// "dram", "cxl", "ssd", or "tier N" for a value this build does not know.
std::string kv_tier_name(uint8_t tier);

// hits / (hits + misses) as a fraction; negative when nothing was asked.
double kv_hit_rate(uint64_t hits, uint64_t misses);

// Status: an object with the store-wide counters and `tiers`, always three
// entries in tier order (a tier the reply does not list is `present: false`).
nlohmann::json kv_status_json(const proto::KvStatusReply& reply);
std::string kv_status_text(const proto::KvStatusReply& reply);

// Namespaces: an array ordered by id. A namespace known only from SSD
// recovery has empty strings and null tp/chunk fields.
nlohmann::json kv_namespaces_json(const proto::KvNamespacesReply& reply);
std::string kv_namespaces_text(const proto::KvNamespacesReply& reply);

nlohmann::json kv_drop_json(uint64_t namespace_id, const proto::KvNamespaceDropReply& reply);
std::string kv_drop_text(uint64_t namespace_id, const proto::KvNamespaceDropReply& reply);

}  // namespace cxlpool::ctl
