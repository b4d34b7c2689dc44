// SPDX-License-Identifier: Apache-2.0
#include "devices_format.hpp"

#include <cstdio>
#include <vector>

#include "cxlpool/common/units.hpp"
#include "table.hpp"

namespace cxlpool::ctl {
namespace {

using nlohmann::json;

const char* kind_name(proto::DevKind kind) { return kind == proto::DevKind::kBlk ? "blk" : "net"; }

const char* health_name(proto::DevHealth health) {
  switch (health) {
    case proto::DevHealth::kHealthy: return "healthy";
    case proto::DevHealth::kLinkDown: return "link-down";
    case proto::DevHealth::kDead: return "dead";
  }
  return "?";
}

std::string mac_text(const uint8_t (&mac)[6]) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
  return buf;
}

std::string device_label(const proto::DevListReply& reply, uint32_t id) {
  if (id == proto::kNoDeviceId) return "-";
  for (const auto& d : reply.devices) {
    if (d.id == id) return d.host + "/" + d.name;
  }
  return "#" + std::to_string(id);
}

std::string capacity_text(const proto::DevDeviceEntry& d) {
  if (d.kind == proto::DevKind::kNet) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f Gbit/s", static_cast<double>(d.capacity) / 1e9);
    return buf;
  }
  return format_size(d.capacity);
}

std::string percent(uint32_t ppm) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.1f%%", static_cast<double>(ppm) / 1e4);
  return buf;
}

}  // namespace

json devices_json(const proto::DevListReply& reply) {
  json devices = json::array();
  for (const auto& d : reply.devices) {
    json e{{"id", d.id},
           {"kind", kind_name(d.kind)},
           {"name", d.name},
           {"host", d.host},
           {"health", health_name(d.health)},
           {"capacity", d.capacity},
           {"load", static_cast<double>(d.load_ppm) / 1e6},
           {"bytes_per_s", d.bytes_per_s},
           {"ops_per_s", d.ops_per_s},
           {"samples", d.samples},
           {"primaries", d.primaries},
           {"backups", d.backups},
           {"lease_left_ms", d.lease_left_ms},
           {"client", d.client_id}};
    if (d.kind == proto::DevKind::kNet) {
      e["mac"] = mac_text(d.mac);
    } else {
      e["iops"] = d.iops;
      e["bandwidth_bps"] = d.bandwidth_bps;
    }
    devices.push_back(std::move(e));
  }
  json attachments = json::array();
  for (const auto& a : reply.attachments) {
    const uint32_t primary = a.device[a.active & 1];
    const uint32_t backup = a.device[(a.active & 1) ^ 1];
    attachments.push_back(json{{"id", a.id},
                               {"kind", kind_name(a.kind)},
                               {"host", a.host},
                               {"generation", a.generation},
                               {"active", a.active},
                               {"primary", primary == proto::kNoDeviceId ? json(nullptr) : json(primary)},
                               {"backup", backup == proto::kNoDeviceId ? json(nullptr) : json(backup)},
                               {"primary_slot", a.slot[a.active & 1]},
                               {"backup_slot", a.slot[(a.active & 1) ^ 1]},
                               {"client", a.client_id}});
  }
  return json{{"enabled", reply.enabled != 0},
              {"pod_path", reply.pod_path},
              {"state", json{{"backend", reply.state_backend},
                             {"connected", reply.state_connected != 0},
                             {"last_error", reply.state_error}}},
              {"failovers", reply.failovers},
              {"table_version", reply.table_version},
              {"devices", devices},
              {"attachments", attachments}};
}

std::string devices_text(const proto::DevListReply& reply) {
  if (reply.enabled == 0) return "device pool: off\n";
  std::string out = "pod file: " + reply.pod_path + " (" + std::to_string(reply.failovers) + " failovers)\n";
  out += "state: " + (reply.state_backend.empty() ? std::string("embedded") : reply.state_backend);
  if (reply.state_backend == "etcd") {
    out += reply.state_connected != 0 ? " (connected)" : " (not connected: " + reply.state_error + ")";
  }
  out += "\n\n";
  if (reply.devices.empty()) {
    out += "no devices registered\n";
  } else {
    Table t({"ID", "KIND", "HOST", "NAME", "HEALTH", "CAPACITY", "LOAD", "PRIMARY", "BACKUP", "LEASE"});
    for (const auto& d : reply.devices) {
      t.add({std::to_string(d.id), kind_name(d.kind), d.host, d.name, health_name(d.health), capacity_text(d),
             d.samples ? percent(d.load_ppm) : "-", std::to_string(d.primaries), std::to_string(d.backups),
             std::to_string(d.lease_left_ms) + " ms"});
    }
    out += t.render();
  }
  out += "\n";
  if (reply.attachments.empty()) return out + "no attachments\n";
  Table t({"ID", "KIND", "HOST", "PRIMARY", "BACKUP", "SLOTS", "GEN"});
  for (const auto& a : reply.attachments) {
    const unsigned active = a.active & 1;
    t.add({std::to_string(a.id), kind_name(a.kind), a.host, device_label(reply, a.device[active]),
           device_label(reply, a.device[active ^ 1]),
           std::to_string(a.slot[active]) + "/" + std::to_string(a.slot[active ^ 1]), std::to_string(a.generation)});
  }
  return out + t.render();
}

std::optional<uint32_t> find_device(const proto::DevListReply& reply, const std::string& which) {
  std::optional<uint32_t> by_name;
  int named = 0;
  for (const auto& d : reply.devices) {
    if (std::to_string(d.id) == which || d.host + "/" + d.name == which) return d.id;
    if (d.name == which) {
      by_name = d.id;
      ++named;
    }
  }
  // A bare name that several hosts use is ambiguous.
  return named == 1 ? by_name : std::nullopt;
}

json failover_json(const proto::DevFailoverReply& reply) {
  return json{{"device", reply.device_id}, {"moved", reply.moved}, {"without_backup", reply.without_backup}};
}

std::string failover_text(const proto::DevFailoverReply& reply) {
  std::string out = "device " + std::to_string(reply.device_id) + ": " + std::to_string(reply.moved) +
                    " attachment(s) switched to their backups";
  if (reply.without_backup != 0) out += ", " + std::to_string(reply.without_backup) + " stay (no backup)";
  return out + "\n";
}

}  // namespace cxlpool::ctl
