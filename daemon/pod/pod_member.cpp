// SPDX-License-Identifier: Apache-2.0
#include "pod_member.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>

#include <nlohmann/json.hpp>

namespace cxlpool::daemon {
namespace {

using json = nlohmann::json;

// What hal::Transport::card() starts with; the rest is checked by
// Transport::add_peer when the card is used.
constexpr const char* kFabricCardPrefix = "cxlpool-fabric/";

bool printable(std::string_view text, size_t max) {
  if (text.size() > max) return false;
  return std::all_of(text.begin(), text.end(), [](char c) { return std::isprint(static_cast<unsigned char>(c)); });
}

Result<std::string> read_text(const json& doc, const char* field, size_t max, bool required) {
  const auto it = doc.find(field);
  if (it == doc.end()) {
    if (required) return fail(EINVAL, std::string(field) + ": missing");
    return std::string();
  }
  if (!it->is_string()) return fail(EINVAL, std::string(field) + ": not a string");
  std::string text = it->get<std::string>();
  if (!printable(text, max)) {
    return fail(EINVAL, std::string(field) + ": more than " + std::to_string(max) + " bytes or not printable");
  }
  return text;
}

Result<uint64_t> read_number(const json& doc, const char* field) {
  const auto it = doc.find(field);
  if (it == doc.end()) return fail(EINVAL, std::string(field) + ": missing");
  if (!it->is_number_unsigned()) return fail(EINVAL, std::string(field) + ": not a non-negative integer");
  return it->get<uint64_t>();
}

}  // namespace

std::string pod_members_prefix(std::string_view pod) {
  return "/cxlpool/pods/" + std::string(pod) + "/members/";
}

std::string encode_pod_member(const PodMember& member) {
  json tiers = json::array();
  for (const auto& t : member.tiers) tiers.push_back({{"name", t.name}, {"kind", t.kind}, {"capacity", t.capacity}});
  json doc = {{"host", member.host},
              {"provider", member.provider},
              {"address", member.address},
              {"exported_bytes", member.exported_bytes},
              {"tiers", tiers},
              {"devices", member.devices}};
  if (!member.card.empty()) doc["card"] = member.card;
  return doc.dump();
}

Result<PodMember> decode_pod_member(std::string_view text, std::string_view host) {
  if (text.size() > kMaxPodRecordBytes) return fail(EINVAL, "record larger than 64 KiB");
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return fail(EINVAL, "not a JSON object");
  PodMember m;
  auto name = read_text(doc, "host", 64, true);
  if (!name) return tl::unexpected(name.error());
  if (*name != host) return fail(EINVAL, "host: '" + *name + "' under the key of '" + std::string(host) + "'");
  m.host = std::move(*name);
  auto provider = read_text(doc, "provider", 64, true);
  if (!provider) return tl::unexpected(provider.error());
  m.provider = std::move(*provider);
  auto address = read_text(doc, "address", 256, false);
  if (!address) return tl::unexpected(address.error());
  m.address = std::move(*address);
  auto exported = read_number(doc, "exported_bytes");
  if (!exported) return tl::unexpected(exported.error());
  m.exported_bytes = *exported;

  const auto tiers = doc.find("tiers");
  if (tiers == doc.end() || !tiers->is_array()) return fail(EINVAL, "tiers: missing or not an array");
  if (tiers->size() > kMaxPodRecordTiers) return fail(EINVAL, "tiers: more than 64");
  for (const json& t : *tiers) {
    if (!t.is_object()) return fail(EINVAL, "tiers: an entry is not an object");
    auto tier_name = read_text(t, "name", 64, true);
    if (!tier_name) return fail(EINVAL, "tiers." + tier_name.error().message);
    auto kind = read_text(t, "kind", 16, true);
    if (!kind) return fail(EINVAL, "tiers." + kind.error().message);
    auto capacity = read_number(t, "capacity");
    if (!capacity) return fail(EINVAL, "tiers." + capacity.error().message);
    m.tiers.push_back({std::move(*tier_name), std::move(*kind), *capacity});
  }
  const auto devices = doc.find("devices");
  if (devices == doc.end() || !devices->is_array()) return fail(EINVAL, "devices: missing or not an array");
  if (devices->size() > kMaxPodRecordDevices) return fail(EINVAL, "devices: more than 256");
  for (const json& d : *devices) {
    if (!d.is_string() || !printable(d.get<std::string>(), 64) || d.get<std::string>().empty()) {
      return fail(EINVAL, "devices: an entry is not a name of 1..64 printable bytes");
    }
    m.devices.push_back(d.get<std::string>());
  }
  // Optional: members from before the transfer engine was served have none.
  auto card = read_text(doc, "card", kMaxPodRecordCard, false);
  if (!card) return tl::unexpected(card.error());
  if (!card->empty() && !card->starts_with(kFabricCardPrefix)) {
    return fail(EINVAL, std::string("card: does not start with '") + kFabricCardPrefix + "'");
  }
  m.card = std::move(*card);
  return m;
}

PodMemberChanges PodMemberTable::replace(std::vector<PodMember> members) {
  PodMemberChanges changes;
  std::map<std::string, PodMember> next;
  for (auto& m : members) {
    const std::string host = m.host;
    next[host] = std::move(m);
  }
  for (const auto& [host, m] : members_) {
    if (!next.contains(host)) changes.departed.push_back(host);
  }
  for (const auto& [host, m] : next) {
    if (!members_.contains(host)) changes.joined.push_back(host);
  }
  members_ = std::move(next);
  return changes;
}

PodMemberChanges PodMemberTable::put(PodMember member) {
  PodMemberChanges changes;
  const std::string host = member.host;
  if (!members_.contains(host)) changes.joined.push_back(host);
  members_[host] = std::move(member);
  return changes;
}

PodMemberChanges PodMemberTable::erase(const std::string& host) {
  PodMemberChanges changes;
  if (members_.erase(host) != 0) changes.departed.push_back(host);
  return changes;
}

std::vector<PodMember> PodMemberTable::members() const {
  std::vector<PodMember> out;
  out.reserve(members_.size());
  for (const auto& [host, m] : members_) out.push_back(m);
  return out;
}

std::optional<PodMember> PodMemberTable::find(const std::string& host) const {
  const auto it = members_.find(host);
  if (it == members_.end()) return std::nullopt;
  return it->second;
}

}  // namespace cxlpool::daemon
