// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/pod_state.hpp"

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::devpool {
namespace {

constexpr EnumName<DeviceKind> kKindNames[] = {{DeviceKind::kNet, "net"}, {DeviceKind::kBlk, "blk"}};
constexpr EnumName<DeviceHealth> kHealthNames[] = {
    {DeviceHealth::kHealthy, "healthy"}, {DeviceHealth::kLinkDown, "link-down"}, {DeviceHealth::kDead, "dead"}};

template <typename Map>
auto values_of(const Map& map) {
  std::vector<typename Map::mapped_type> out;
  out.reserve(map.size());
  for (const auto& [key, value] : map) out.push_back(value);
  return out;
}

template <typename Map, typename Key>
std::optional<typename Map::mapped_type> find_in(const Map& map, const Key& key) {
  auto it = map.find(key);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

}  // namespace

const char* device_kind_name(DeviceKind kind) { return enum_name(kKindNames, kind, "unknown"); }
const char* device_health_name(DeviceHealth health) { return enum_name(kHealthNames, health, "unknown"); }

std::optional<Device> EmbeddedPodState::device(uint32_t id) const { return find_in(devices_, id); }
std::vector<Device> EmbeddedPodState::devices() const { return values_of(devices_); }
std::optional<Attachment> EmbeddedPodState::attachment(uint32_t id) const { return find_in(attachments_, id); }
std::vector<Attachment> EmbeddedPodState::attachments() const { return values_of(attachments_); }
std::vector<Host> EmbeddedPodState::hosts() const { return values_of(hosts_); }
std::optional<Lease> EmbeddedPodState::lease(uint32_t device) const { return find_in(leases_, device); }
std::vector<Lease> EmbeddedPodState::leases() const { return values_of(leases_); }

}  // namespace cxlpool::devpool
