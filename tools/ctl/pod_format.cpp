// SPDX-License-Identifier: Apache-2.0
#include "pod_format.hpp"

#include <cstdio>
#include <vector>

#include "cxlpool/common/units.hpp"
#include "table.hpp"

namespace cxlpool::ctl {
namespace {

using nlohmann::json;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::string lease_text(uint64_t lease) {
  if (lease == 0) return "-";
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(lease));
  return buf;
}

}  // namespace

json pod_status_json(const proto::PodStatusReply& reply) {
  json members = json::array();
  for (const auto& m : reply.members) {
    members.push_back({{"host", m.host},
                       {"self", m.self != 0},
                       {"provider", m.provider},
                       {"address", m.address},
                       {"exported_bytes", m.exported_bytes},
                       {"lease_id", m.lease_id},
                       {"revision", m.revision},
                       {"tiers", split_list(m.tiers)},
                       {"devices", split_list(m.devices)}});
  }
  return {{"backend", reply.backend == proto::PodBackend::kEtcd ? "etcd" : "embedded"},
          {"connected", reply.connected != 0},
          {"pod", reply.pod},
          {"host", reply.host},
          {"endpoints", split_list(reply.endpoints)},
          {"lease_id", reply.lease_id},
          {"lease_ttl_s", reply.lease_ttl_s},
          {"joins", reply.joins},
          {"departures", reply.departures},
          {"etcd_errors", reply.etcd_errors},
          {"last_error", reply.last_error},
          {"members", members}};
}

std::string pod_status_text(const proto::PodStatusReply& reply) {
  std::string out = "pod " + reply.pod + ", this host " + reply.host + ": ";
  if (reply.backend == proto::PodBackend::kEmbedded) {
    out += "embedded (single host)\n";
  } else {
    out += "etcd at " + reply.endpoints + (reply.connected ? ", connected" : ", NOT CONNECTED") + ", lease " +
           lease_text(reply.lease_id) + " (ttl " + std::to_string(reply.lease_ttl_s) + " s)\n";
    out += std::to_string(reply.joins) + " joins, " + std::to_string(reply.departures) + " departures, " +
           std::to_string(reply.etcd_errors) + " etcd errors\n";
    if (!reply.last_error.empty()) out += "last etcd error: " + reply.last_error + "\n";
  }
  out += "\n";
  Table t({"HOST", "PROVIDER", "ADDRESS", "EXPORTED", "TIERS", "DEVICES", "LEASE"});
  for (const auto& m : reply.members) {
    t.add({m.host + (m.self ? " *" : ""), m.provider, m.address.empty() ? "-" : m.address,
           format_size(m.exported_bytes), std::to_string(split_list(m.tiers).size()),
           std::to_string(split_list(m.devices).size()), lease_text(m.lease_id)});
  }
  return out + t.render();
}

}  // namespace cxlpool::ctl
