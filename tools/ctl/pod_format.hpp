// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl pod status` output: the pod's members as JSON and as a text
// table. Pure functions of the reply, so their shape is unit-tested.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::ctl {

// {"backend": "embedded"|"etcd", "connected", "pod", "host", "endpoints":
// [...], "lease_id", "lease_ttl_s", "joins", "departures", "etcd_errors",
// "last_error", "members": [{"host", "self", "provider", "address",
// "exported_bytes", "lease_id", "revision", "tiers": [...], "devices": [...]}]}
nlohmann::json pod_status_json(const proto::PodStatusReply& reply);
std::string pod_status_text(const proto::PodStatusReply& reply);

}  // namespace cxlpool::ctl
