// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/pod_allocator.hpp"

#include <algorithm>
#include <tuple>

#include "cxlpool/common/enum_names.hpp"

namespace cxlpool::devpool {
namespace {

constexpr EnumName<FailoverAction> kActionNames[] = {
    {FailoverAction::kSwitched, "switched"},     {FailoverAction::kBackupReplaced, "backup-replaced"},
    {FailoverAction::kBackupLost, "backup-lost"}, {FailoverAction::kReassigned, "reassigned"},
    {FailoverAction::kStranded, "stranded"}};

bool contains(const std::vector<uint32_t>& ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

const char* failover_action_name(FailoverAction action) { return enum_name(kActionNames, action, "unknown"); }

PodAllocator::PodAllocator(PodState& state, AllocatorConfig config) : state_(state), config_(config) {}

std::optional<uint32_t> PodAllocator::free_line(const std::vector<uint32_t>& used, uint32_t limit) const {
  for (uint32_t line = 0; line < limit; ++line) {
    if (!contains(used, line)) return line;
  }
  return std::nullopt;
}

uint32_t PodAllocator::primaries_on(uint32_t device) const {
  uint32_t n = 0;
  for (const Attachment& a : state_.attachments()) n += a.primary().device == device ? 1 : 0;
  return n;
}

const DeviceLoad* PodAllocator::load(uint32_t device) const {
  auto it = load_.find(device);
  return it == load_.end() || it->second.total_samples() == 0 ? nullptr : &it->second;
}

uint64_t PodAllocator::lease_expiry(uint32_t device) const {
  auto lease = state_.lease(device);
  return lease ? lease->expires_ns : 0;
}

double PodAllocator::score(const Device& device) const {
  const DeviceLoad* measured = load(device.id);
  // Another daemon's device: the load its daemon last wrote to the state.
  const double ewma = measured != nullptr ? measured->ewma() : static_cast<double>(device.load.utilization_ppm) / 1e6;
  const bool net = device.spec.kind == DeviceKind::kNet;
  const uint64_t capacity = net ? device.spec.capacity : device.spec.bandwidth_bps;
  const uint64_t nominal = net ? config_.net_attachment_bps : config_.blk_attachment_bytes_s;
  // Without a throughput figure every attachment counts as a whole device.
  const double share = capacity == 0 ? 1.0 : static_cast<double>(nominal) / static_cast<double>(capacity);
  return ewma + share * primaries_on(device.id);
}

std::optional<Device> PodAllocator::pick(DeviceKind kind, const std::vector<uint32_t>& exclude,
                                         const std::string& avoid_host, const std::string& same_device) const {
  std::optional<Device> best;
  std::tuple<bool, double, uint32_t> best_key{};
  for (const Device& d : state_.devices()) {
    if (d.spec.kind != kind || d.health != DeviceHealth::kHealthy || contains(exclude, d.id)) continue;
    if (kind == DeviceKind::kBlk && !same_device.empty() && d.spec.name != same_device) continue;
    // Another host first (a backup on the primary's host dies with it),
    // then the least loaded, then the one with fewer primaries; ids
    // (registration order) break what ties remain.
    const std::tuple<bool, double, uint32_t> key{!avoid_host.empty() && d.spec.host == avoid_host, score(d),
                                                 primaries_on(d.id)};
    if (!best || key < best_key) {
      best = d;
      best_key = key;
    }
  }
  return best;
}

void PodAllocator::note_host(const std::string& host, uint64_t now_ns) {
  for (const Host& h : state_.hosts()) {
    if (h.name == host) return;
  }
  state_.put_host({host, now_ns});
}

RegisterOutcome PodAllocator::register_device(const DeviceSpec& spec, uint64_t owner, uint64_t now_ns) {
  RegisterOutcome out;
  std::vector<uint32_t> lines;
  for (const Device& d : state_.devices()) {
    if (d.spec.host == spec.host && d.spec.name == spec.name) {
      if (d.health != DeviceHealth::kDead) {
        out.status = RegisterStatus::kNameTaken;
        return out;
      }
      // A backend that hung past its lease and came back: the old entry
      // was failed over already.
      out.replaced = d.id;
      continue;
    }
    lines.push_back(d.line);
  }
  auto line = free_line(lines, config_.max_devices);
  if (!line) {
    out.status = RegisterStatus::kFull;
    return out;
  }
  if (out.replaced != kNoDevice) fail_device(out.replaced, true);
  Device d;
  d.id = state_.next_id();
  d.line = *line;
  d.spec = spec;
  d.owner = owner;
  d.registered_ns = now_ns;
  state_.put_device(d);
  state_.put_lease({d.id, now_ns + config_.lease_ns});
  note_host(spec.host, now_ns);
  load_.erase(d.id);
  load_published_ns_.erase(d.id);
  out.device = d.id;
  out.repaired = repair();
  return out;
}

FailoverReport PodAllocator::repair() {
  FailoverReport report;
  for (Attachment a : state_.attachments()) {
    const uint32_t before = a.generation;
    AttachmentLeg& primary = a.legs[a.active];
    AttachmentLeg& backup = a.legs[a.active ^ 1];
    if (primary.device == kNoDevice) {
      if (auto d = pick(a.kind, {}, "")) {
        report.events.push_back({a.id, FailoverAction::kReassigned, kNoDevice, d->id, kNoDevice});
        primary.device = d->id;
        report.slots_to_format.push_back(primary.slot);
        ++a.generation;
      }
    }
    if (primary.device != kNoDevice && backup.device == kNoDevice) {
      const auto p = state_.device(primary.device);
      if (auto d = pick(a.kind, {primary.device}, p ? p->spec.host : std::string(), p ? p->spec.name : std::string())) {
        report.events.push_back({a.id, FailoverAction::kBackupReplaced, kNoDevice, primary.device, d->id});
        backup.device = d->id;
        report.slots_to_format.push_back(backup.slot);
        ++a.generation;
      }
    }
    if (a.generation != before) {
      state_.put_attachment(a);
      report.changed.push_back(a);
    }
  }
  return report;
}

FailoverReport PodAllocator::fail_device(uint32_t id, bool remove) {
  auto device = state_.device(id);
  if (!device) return {};
  return fail_legs(*device, remove);
}

FailoverReport PodAllocator::device_gone(const Device& last) { return fail_legs(last, true); }

FailoverReport PodAllocator::fail_legs(const Device& gone, bool remove) {
  FailoverReport report;
  const uint32_t id = gone.id;
  report.failed_devices.push_back(id);
  if (remove) {
    state_.erase_device(id);
    state_.erase_lease(id);
    load_.erase(id);
    load_published_ns_.erase(id);
  }
  for (Attachment a : state_.attachments()) {
    int leg = -1;
    for (int i = 0; i < 2; ++i) leg = a.legs[i].device == id ? i : leg;
    if (leg < 0) continue;
    FailoverEvent event{a.id, FailoverAction::kSwitched, id, kNoDevice, kNoDevice};
    AttachmentLeg& lost = a.legs[leg];
    const AttachmentLeg& other = a.legs[leg ^ 1];
    lost.device = kNoDevice;
    if (leg == a.active && other.device != kNoDevice) {
      // The reserved backup takes over; the lost leg becomes the backup
      // and gets a new device where one is free.
      a.active = static_cast<uint8_t>(leg ^ 1);
      event.to_device = other.device;
      const auto now_primary = state_.device(other.device);
      if (auto d = pick(a.kind, {id, other.device}, now_primary ? now_primary->spec.host : std::string(),
                        gone.spec.name)) {
        lost.device = d->id;
        event.new_backup = d->id;
      }
    } else if (leg == a.active) {
      auto d = pick(a.kind, {id}, "", gone.spec.name);
      event.action = d ? FailoverAction::kReassigned : FailoverAction::kStranded;
      if (d) lost.device = event.to_device = d->id;
    } else {
      event.to_device = other.device;
      const auto primary = state_.device(other.device);
      auto d = pick(a.kind, {id, other.device}, primary ? primary->spec.host : std::string(), gone.spec.name);
      event.action = d ? FailoverAction::kBackupReplaced : FailoverAction::kBackupLost;
      if (d) lost.device = event.new_backup = d->id;
    }
    if (lost.device != kNoDevice) report.slots_to_format.push_back(lost.slot);
    ++a.generation;
    state_.put_attachment(a);
    report.events.push_back(event);
    report.changed.push_back(a);
  }
  return report;
}

FailoverReport PodAllocator::deregister_device(uint32_t device, uint64_t) { return fail_device(device, true); }

HeartbeatOutcome PodAllocator::heartbeat(uint32_t id, const LoadSample& sample, uint64_t now_ns) {
  HeartbeatOutcome out;
  auto device = state_.device(id);
  if (!device) {
    out.status = HeartbeatStatus::kUnknown;
    return out;
  }
  if (device->health == DeviceHealth::kDead) {
    out.status = HeartbeatStatus::kExpired;
    return out;
  }
  state_.put_lease({id, now_ns + config_.lease_ns});
  LoadSample stamped = sample;
  stamped.at_ns = now_ns;
  DeviceLoad& load = load_[id];
  // A decision made again on a newer view (a shared state's conflict)
  // takes the same heartbeat's sample once.
  if (load.total_samples() == 0 || load.recent(0).at_ns != now_ns) load.add(device->spec, stamped);
  if (load_publish_due(*device, load, now_ns)) {
    device->load = {utilization_ppm(load.ewma()), stamped.bytes_per_s, stamped.ops_per_s,
                    static_cast<uint32_t>(std::min<uint64_t>(load.total_samples(), UINT32_MAX))};
    state_.put_device(*device);
    load_published_ns_[id] = now_ns;
    out.load_published = true;
  }
  if (device->spec.kind != DeviceKind::kNet) return out;
  if (!sample.link_up && device->health == DeviceHealth::kHealthy) {
    device->health = DeviceHealth::kLinkDown;
    state_.put_device(*device);
    out.health_changed = true;
    out.failover = fail_device(id, false);
  } else if (sample.link_up && device->health == DeviceHealth::kLinkDown) {
    // Back in service: for new attachments and legs that have no device.
    device->health = DeviceHealth::kHealthy;
    state_.put_device(*device);
    out.health_changed = true;
    out.failover = repair();
  }
  return out;
}

bool PodAllocator::load_publish_due(const Device& device, const DeviceLoad& load, uint64_t now_ns) const {
  if (config_.load_publish_ns == 0) return false;
  auto last = load_published_ns_.find(device.id);
  // The same heartbeat decided again: the same answer.
  if (last != load_published_ns_.end() && last->second == now_ns) return true;
  if (device.load.samples == 0) return true;
  const uint64_t since = last == load_published_ns_.end() || now_ns < last->second ? UINT64_MAX : now_ns - last->second;
  if (since < config_.load_publish_min_ns) return false;
  const uint32_t now_ppm = utilization_ppm(load.ewma());
  const uint32_t was_ppm = device.load.utilization_ppm;
  const uint32_t moved = now_ppm > was_ppm ? now_ppm - was_ppm : was_ppm - now_ppm;
  if (moved >= config_.load_publish_step_ppm) return true;
  return since >= config_.load_publish_ns && moved >= config_.load_publish_noise_ppm;
}

FailoverReport PodAllocator::expire(uint64_t now_ns) {
  FailoverReport report;
  for (const Lease& lease : state_.leases()) {
    if (lease.expires_ns > now_ns) continue;
    state_.erase_lease(lease.device);
    auto device = state_.device(lease.device);
    if (!device || device->health == DeviceHealth::kDead) continue;
    const bool in_service = device->health == DeviceHealth::kHealthy;
    device->health = DeviceHealth::kDead;
    state_.put_device(*device);
    FailoverReport one = fail_device(lease.device, false);
    // A NIC with its link down was failed over already; it counts as failed again only by its lease.
    if (!in_service) one.events.clear();
    report.failed_devices.insert(report.failed_devices.end(), one.failed_devices.begin(), one.failed_devices.end());
    report.events.insert(report.events.end(), one.events.begin(), one.events.end());
    report.changed.insert(report.changed.end(), one.changed.begin(), one.changed.end());
    report.slots_to_format.insert(report.slots_to_format.end(), one.slots_to_format.begin(),
                                  one.slots_to_format.end());
  }
  return report;
}

std::optional<FailoverReport> PodAllocator::drain(uint32_t id, uint64_t) {
  if (!state_.device(id)) return std::nullopt;
  FailoverReport report;
  for (Attachment a : state_.attachments()) {
    if (a.primary().device != id || a.backup().device == kNoDevice) continue;
    a.active ^= 1;
    ++a.generation;
    state_.put_attachment(a);
    report.events.push_back({a.id, FailoverAction::kSwitched, id, a.primary().device, id});
    report.changed.push_back(a);
  }
  return report;
}

AttachOutcome PodAllocator::attach(const AttachRequest& request, uint64_t owner, uint64_t now_ns) {
  AttachOutcome out;
  std::vector<uint32_t> lines;
  for (const Attachment& a : state_.attachments()) lines.push_back(a.line);
  auto line = free_line(lines, config_.max_attachments);
  if (!line) {
    out.status = AttachStatus::kFull;
    return out;
  }
  std::optional<Device> primary;
  if (!request.preferred.empty()) {
    for (const Device& d : state_.devices()) {
      if (d.spec.kind == request.kind && d.health == DeviceHealth::kHealthy && d.spec.name == request.preferred &&
          (request.preferred_host.empty() || d.spec.host == request.preferred_host)) {
        primary = d;
        out.preferred_used = true;
        break;
      }
    }
  }
  if (!primary) primary = pick(request.kind, {}, "");
  if (!primary) {
    out.status = AttachStatus::kNoDevice;
    return out;
  }
  const auto backup = pick(request.kind, {primary->id}, primary->spec.host, primary->spec.name);
  Attachment& a = out.attachment;
  a.id = state_.next_id();
  a.line = *line;
  a.host = request.host;
  a.kind = request.kind;
  a.legs[0] = {primary->id, 2 * *line};
  a.legs[1] = {backup ? backup->id : kNoDevice, 2 * *line + 1};
  a.active = 0;
  a.generation = 1;
  a.owner = owner;
  a.attached_ns = now_ns;
  state_.put_attachment(a);
  note_host(request.host, now_ns);
  return out;
}

bool PodAllocator::detach(uint32_t attachment) {
  if (!state_.attachment(attachment)) return false;
  state_.erase_attachment(attachment);
  return true;
}

}  // namespace cxlpool::devpool
