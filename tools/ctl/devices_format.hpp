// SPDX-License-Identifier: Apache-2.0
// `cxlpoolctl devices ...` output: the device pool's registry, attachments,
// load and health as JSON and as text tables. Pure functions of the replies,
// so their shape is unit-tested.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::ctl {

// {"enabled", "pod_path", "failovers", "table_version", "devices": [...],
// "attachments": [...]}; a device's "load" is its utilization (EWMA) as a
// fraction of its capacity, an attachment names its primary and backup.
nlohmann::json devices_json(const proto::DevListReply& reply);
std::string devices_text(const proto::DevListReply& reply);

// The device an operator named: its id, its name when one host has it, or host/name.
std::optional<uint32_t> find_device(const proto::DevListReply& reply, const std::string& which);

nlohmann::json failover_json(const proto::DevFailoverReply& reply);
std::string failover_text(const proto::DevFailoverReply& reply);

}  // namespace cxlpool::ctl
