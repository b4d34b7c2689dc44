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
  json rails = json::array();
  for (const auto& r : reply.rails) {
    rails.push_back({{"provider", r.provider},
                     {"address", r.address},
                     {"up", r.up != 0},
                     {"bytes_read", r.bytes_read},
                     {"bytes_written", r.bytes_written},
                     {"chunks", r.chunks},
                     {"failures", r.failures},
                     {"resets", r.resets}});
  }
  json peers = json::array();
  for (const auto& p : reply.peers) {
    peers.push_back({{"host", p.host},
                     {"fetched_chunks", p.fetched_chunks},
                     {"fetched_bytes", p.fetched_bytes},
                     {"fetch_errors", p.fetch_errors},
                     {"retries", p.retries},
                     {"pins_served", p.pins_served}});
  }
  json fabric = {{"transport", reply.fabric},
                 {"error", reply.fabric_error},
                 {"requests", reply.transfer_requests},
                 {"requests_failed", reply.transfer_failures},
                 {"chunks_retried", reply.chunks_retried},
                 {"checksum_mismatches", reply.checksum_mismatches},
                 {"rails", rails},
                 {"peers", peers}};
  json kv = {{"remote_gets", reply.kv_remote_gets},   {"remote_hits", reply.kv_remote_hits},
             {"remote_misses", reply.kv_remote_misses}, {"remote_bytes", reply.kv_remote_bytes},
             {"remote_errors", reply.kv_remote_errors}, {"pins_served", reply.kv_pins_served},
             {"replications_sent", reply.kv_replications_sent}, {"replicated_chunks", reply.kv_replicated_chunks},
             {"replication_errors", reply.kv_replication_errors},
             {"replication_dropped", reply.kv_replication_dropped}};
  return {{"backend", reply.backend == proto::PodBackend::kEtcd ? "etcd" : "embedded"},
          {"fabric", fabric},
          {"kv", kv},
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
  out += t.render();
  if (reply.backend == proto::PodBackend::kEmbedded) return out;
  out += "\ntransfer engine: ";
  if (reply.fabric.empty()) {
    out += "NOT OPEN: " + reply.fabric_error + "\n";
    return out;
  }
  out += reply.fabric + ", " + std::to_string(reply.transfer_requests) + " requests, " +
         std::to_string(reply.transfer_failures) + " failed, " + std::to_string(reply.chunks_retried) +
         " chunks retried, " + std::to_string(reply.checksum_mismatches) + " checksum mismatches\n";
  if (!reply.fabric_error.empty()) out += "problem: " + reply.fabric_error + "\n";
  Table rails({"RAIL", "PROVIDER", "ADDRESS", "STATE", "READ", "WRITTEN", "CHUNKS", "FAILURES", "RESETS"});
  for (size_t i = 0; i < reply.rails.size(); ++i) {
    const auto& r = reply.rails[i];
    rails.add({std::to_string(i), r.provider, r.address, r.up ? "up" : "DOWN", format_size(r.bytes_read),
               format_size(r.bytes_written), std::to_string(r.chunks), std::to_string(r.failures),
               std::to_string(r.resets)});
  }
  out += rails.render();
  out += "KV across the pod: " + std::to_string(reply.kv_remote_gets) + " remote gets, " +
         std::to_string(reply.kv_remote_hits) + " chunks fetched (" + format_size(reply.kv_remote_bytes) + "), " +
         std::to_string(reply.kv_remote_misses) + " misses, " + std::to_string(reply.kv_remote_errors) +
         " errors, " + std::to_string(reply.kv_pins_served) + " chunks pinned for peers\n";
  out += "KV replicas: " + std::to_string(reply.kv_replications_sent) + " requests accepted by peers, " +
         std::to_string(reply.kv_replicated_chunks) + " chunks copied here, " +
         std::to_string(reply.kv_replication_errors) + " errors, " + std::to_string(reply.kv_replication_dropped) +
         " copies dropped\n";
  if (!reply.peers.empty()) {
    Table peers({"PEER", "FETCHED", "BYTES", "ERRORS", "RETRIES", "PINNED FOR IT"});
    for (const auto& p : reply.peers) {
      peers.add({p.host, std::to_string(p.fetched_chunks), format_size(p.fetched_bytes),
                 std::to_string(p.fetch_errors), std::to_string(p.retries), std::to_string(p.pins_served)});
    }
    out += peers.render();
  }
  return out;
}

}  // namespace cxlpool::ctl
