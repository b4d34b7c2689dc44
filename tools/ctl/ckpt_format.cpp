// SPDX-License-Identifier: Apache-2.0
#include "ckpt_format.hpp"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <vector>

#include "cxlpool/common/units.hpp"
#include "table.hpp"

namespace cxlpool::ctl {
namespace {

using nlohmann::json;

std::vector<proto::CkptEntry> by_name(const proto::CkptListReply& reply) {
  std::vector<proto::CkptEntry> out = reply.checkpoints;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

// UTC, to the second: the same on every host that reads the listing.
std::string utc_time(uint64_t unix_ns) {
  const std::time_t t = static_cast<std::time_t>(unix_ns / 1000000000ull);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

json ckpt_list_json(const proto::CkptListReply& reply) {
  json out = json::array();
  for (const auto& e : by_name(reply)) {
    out.push_back(json{{"name", e.name},
                       {"region", e.region_id},
                       {"tier", e.tier_id},
                       {"bytes", e.image_bytes},
                       {"owner_uid", e.owner_uid},
                       {"pid", e.pid},
                       {"threads", e.threads},
                       {"created_unix_ns", e.created_unix_ns},
                       {"capture_ns", e.capture_ns},
                       {"restores", e.restores}});
  }
  return out;
}

std::string ckpt_list_text(const proto::CkptListReply& reply) {
  if (reply.checkpoints.empty()) return "no checkpoints\n";
  Table t({"NAME", "TIER", "SIZE", "OWNER", "PID", "THREADS", "CREATED", "CAPTURE", "RESTORES", "REGION"});
  for (const auto& e : by_name(reply)) {
    char capture[32];
    std::snprintf(capture, sizeof capture, "%.1f ms", static_cast<double>(e.capture_ns) / 1e6);
    t.add({e.name, std::to_string(e.tier_id), format_size(e.image_bytes), std::to_string(e.owner_uid),
           std::to_string(e.pid), std::to_string(e.threads), utc_time(e.created_unix_ns), capture,
           std::to_string(e.restores), std::to_string(e.region_id)});
  }
  return t.render();
}

json ckpt_restore_json(const proto::CkptRestoreReply& reply) {
  json clones = json::array();
  for (const auto& c : reply.clones) clones.push_back(json{{"pid", c.pid}, {"keeper", c.keeper}, {"ns_pid", c.ns_pid}});
  return json{{"restore_ns", reply.restore_ns}, {"clones", clones}};
}

std::string ckpt_restore_text(const std::string& name, const proto::CkptRestoreReply& reply) {
  char head[256];
  std::snprintf(head, sizeof head, "restored %zu clone(s) of '%s' in %.1f ms\n", reply.clones.size(), name.c_str(),
                static_cast<double>(reply.restore_ns) / 1e6);
  std::string out = head;
  for (const auto& c : reply.clones) {
    out += "pid " + std::to_string(c.pid) + " (pid " + std::to_string(c.ns_pid) + " in its namespace, keeper " +
           std::to_string(c.keeper) + ")\n";
  }
  return out;
}

}  // namespace cxlpool::ctl
