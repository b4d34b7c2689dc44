// SPDX-License-Identifier: Apache-2.0
#include "weights_format.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cxlpool/common/units.hpp"
#include "table.hpp"

namespace cxlpool::ctl {
namespace {

using nlohmann::json;

double resident_fraction(const proto::WeightsEntry& e) {
  if (e.total_bytes == 0) return 1.0;
  return static_cast<double>(e.resident_bytes) / static_cast<double>(e.total_bytes);
}

std::vector<proto::WeightsEntry> by_name(const proto::WeightsListReply& reply) {
  std::vector<proto::WeightsEntry> out = reply.models;
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.model < b.model; });
  return out;
}

}  // namespace

json weights_list_json(const proto::WeightsListReply& reply) {
  json out = json::array();
  for (const auto& e : by_name(reply)) {
    out.push_back(json{{"model", e.model},
                       {"region", e.region_name},
                       {"tier", e.tier_id},
                       {"files", e.files},
                       {"tensors", e.tensor_count},
                       {"total_bytes", e.total_bytes},
                       {"resident_bytes", e.resident_bytes},
                       {"resident_fraction", resident_fraction(e)},
                       {"region_bytes", e.region_bytes},
                       {"owner_uid", e.owner_uid},
                       {"opens", e.opens}});
  }
  return out;
}

std::string weights_list_text(const proto::WeightsListReply& reply) {
  if (reply.models.empty()) return "no models loaded\n";
  Table t({"MODEL", "TIER", "FILES", "TENSORS", "TOTAL", "RESIDENT", "REGION", "OWNER", "OPENS"});
  for (const auto& e : by_name(reply)) {
    char resident[64];
    std::snprintf(resident, sizeof resident, "%s (%.0f%%)", format_size(e.resident_bytes).c_str(),
                  resident_fraction(e) * 100.0);
    t.add({e.model, std::to_string(e.tier_id), std::to_string(e.files), std::to_string(e.tensor_count),
           format_size(e.total_bytes), resident, format_size(e.region_bytes), std::to_string(e.owner_uid),
           std::to_string(e.opens)});
  }
  return t.render();
}

json weights_unload_json(const std::string& model, const proto::WeightsUnloadReply& reply) {
  return json{{"model", model}, {"region_bytes", reply.region_bytes}};
}

std::string weights_unload_text(const std::string& model, const proto::WeightsUnloadReply& reply) {
  return "unloaded '" + model + "': its " + format_size(reply.region_bytes) +
         " region is freed once no process maps it\n";
}

}  // namespace cxlpool::ctl
