// SPDX-License-Identifier: Apache-2.0
#include "devpool_service.hpp"

#include <algorithm>

#include "../logging.hpp"
#include "cxlpool/devpool/line_access.hpp"

namespace cxlpool::daemon {
namespace {

using devpool::Attachment;
using devpool::Device;
using devpool::DeviceKind;
using devpool::FailoverAction;

template <class Lines>
class TableSinkOf final : public PodTableSink {
 public:
  TableSinkOf(std::span<std::byte> memory, const devpool::PodGeometry& g) : writer_(memory, g) {}
  void write(uint32_t index, const devpool::AttachmentLine& line) override { writer_.write(index, line); }
  void write(uint32_t index, const devpool::DeviceLine& line) override { writer_.write(index, line); }

 private:
  devpool::PodTableWriter<Lines> writer_;
};

devpool::Coherence coherence_of(DevpoolCoherence c) {
  return c == DevpoolCoherence::kNonCoherent ? devpool::Coherence::kNonCoherent : devpool::Coherence::kCoherent;
}

devpool::AllocatorConfig allocator_config(const DevpoolSection& c) {
  devpool::AllocatorConfig a;
  a.lease_ns = uint64_t{c.lease_ms} * 1'000'000;
  a.max_devices = c.max_devices;
  a.max_attachments = c.link_slots / 2;
  return a;
}

// EDQUOT when a non-admin uid holds `limit` of something already; a limit of 0 is no limit.
Result<void> within_limit(const std::map<uid_t, uint32_t>& held, uid_t uid, bool admin, uint32_t limit,
                          const char* what, const char* key) {
  if (admin || limit == 0) return {};
  auto it = held.find(uid);
  if (it == held.end() || it->second < limit) return {};
  return fail(EDQUOT, "uid " + std::to_string(uid) + " holds " + std::to_string(limit) + " " + what +
                          " already (devpool." + key + ")");
}

void release(std::map<uid_t, uint32_t>& held, uid_t uid) {
  auto it = held.find(uid);
  if (it != held.end() && --it->second == 0) held.erase(it);
}

// Whether `session` made `id` here: the ids of a shared state are the
// pod's, and another daemon's connection numbers mean nothing here.
bool made_by(const std::map<uint64_t, std::set<uint32_t>>& made, uint64_t session, uint32_t id) {
  auto it = made.find(session);
  return it != made.end() && it->second.count(id) != 0;
}

// A decision that lost to another daemon's is made again on the new view
// this often before the request fails.
constexpr int kDecideAttempts = 8;

}  // namespace

DevpoolLimits DevpoolService::limits(const DevpoolSection& config) {
  return DevpoolLimits{config.max_devices, config.link_slots / 2};
}

Result<std::unique_ptr<DevpoolService>> DevpoolService::create(const DevpoolSection& config,
                                                               const std::filesystem::path& state_dir,
                                                               std::unique_ptr<EtcdPodState> etcd) {
  devpool::PodGeometry g;
  g.max_devices = config.max_devices;
  g.max_attachments = config.link_slots / 2;
  g.slot_bytes = devpool::pod_slot_bytes(config.link_buffer_bytes);
  g.coherence = coherence_of(config.coherence);
  const std::filesystem::path path = config.pod_path.empty() ? state_dir / "devpool.pod" : std::filesystem::path(config.pod_path);
  auto pod = PodFile::create(path, g);
  if (!pod) return tl::unexpected(pod.error());
  return std::unique_ptr<DevpoolService>(new DevpoolService(config, std::move(*pod), std::move(etcd)));
}

DevpoolService::DevpoolService(const DevpoolSection& config, PodFile pod, std::unique_ptr<EtcdPodState> etcd)
    : config_(config),
      pod_(std::move(pod)),
      etcd_(std::move(etcd)),
      state_(etcd_ ? static_cast<devpool::PodState&>(*etcd_) : embedded_),
      allocator_(state_, allocator_config(config)),
      device_line_generation_(config.max_devices, 0) {
  if (pod_.geometry().coherence == devpool::Coherence::kNonCoherent) {
    table_ = std::make_unique<TableSinkOf<devpool::NonCoherentLines>>(pod_.memory(), pod_.geometry());
  } else {
    table_ = std::make_unique<TableSinkOf<devpool::CoherentLines>>(pod_.memory(), pod_.geometry());
  }
}

template <typename Decide>
auto DevpoolService::decide(Decide&& run) -> Result<decltype(run())> {
  for (int attempt = 1;; ++attempt) {
    state_.begin();
    auto out = run();
    auto ok = state_.commit();
    if (ok) return out;
    if (ok.error().code != EAGAIN || attempt == kDecideAttempts) return tl::unexpected(ok.error());
  }
}

template <typename Reply>
void DevpoolService::fill_pod(Reply& reply) const {
  const devpool::PodGeometry& g = pod_.geometry();
  reply.pod_bytes = pod_.memory().size();
  reply.slot_bytes = g.slot_bytes;
  reply.link_slots = g.link_slots();
  reply.max_devices = g.max_devices;
  reply.max_attachments = g.max_attachments;
  reply.coherence = static_cast<uint8_t>(g.coherence);
}

void DevpoolService::format_slot(uint32_t slot, DeviceKind kind) {
  auto memory = devpool::pod_slot(pod_.memory(), pod_.geometry(), slot);
  if (!memory) return;
  auto ok = devpool::format_link(*memory,
                                 devpool::pod_link_geometry(kind, config_.link_buffer_bytes, pod_.geometry().coherence));
  if (!ok) {
    logger("devpool")->error("formatting link slot {}: {}", slot, ok.error().message);
    return;
  }
  ++counters_.slots_formatted;
}

void DevpoolService::write_attachment(const Attachment& a) {
  devpool::AttachmentLine line;
  line.generation = a.generation;
  line.attachment_id = a.id;
  line.state = devpool::LineState::kInUse;
  line.active = a.active;
  line.kind = static_cast<uint8_t>(a.kind);
  for (int i = 0; i < 2; ++i) {
    line.device[i] = a.legs[i].device;
    line.slot[i] = a.legs[i].slot;
  }
  table_->write(a.line, line);
  mirror_attachments_[a.line] = a;
  ++table_version_;
  ++counters_.table_writes;
}

void DevpoolService::free_attachment_line(const Attachment& a) {
  devpool::AttachmentLine line;
  line.generation = a.generation + 1;
  line.attachment_id = a.id;
  line.state = devpool::LineState::kFree;
  table_->write(a.line, line);
  mirror_attachments_.erase(a.line);
  ++table_version_;
  ++counters_.table_writes;
}

void DevpoolService::write_device(const Device& d) {
  if (d.line >= device_line_generation_.size()) return;
  devpool::DeviceLine line;
  line.generation = ++device_line_generation_[d.line];
  line.device_id = d.id;
  line.state = devpool::LineState::kInUse;
  line.kind = static_cast<uint8_t>(d.spec.kind);
  line.health = static_cast<uint8_t>(d.health);
  table_->write(d.line, line);
  mirror_devices_[d.line] = d;
  ++table_version_;
  ++counters_.table_writes;
}

void DevpoolService::free_device_line(uint32_t index, uint32_t device_id) {
  if (index >= device_line_generation_.size()) return;
  devpool::DeviceLine line;
  line.generation = ++device_line_generation_[index];
  line.device_id = device_id;
  line.state = devpool::LineState::kFree;
  table_->write(index, line);
  mirror_devices_.erase(index);
  ++table_version_;
  ++counters_.table_writes;
}

void DevpoolService::apply(const devpool::FailoverReport& report, const char* why) {
  auto log = logger("devpool");
  for (const Attachment& a : report.changed) {
    for (const auto& leg : a.legs) {
      if (std::find(report.slots_to_format.begin(), report.slots_to_format.end(), leg.slot) !=
          report.slots_to_format.end()) {
        format_slot(leg.slot, a.kind);
      }
    }
    write_attachment(a);
  }
  for (const auto& e : report.events) {
    switch (e.action) {
      case FailoverAction::kSwitched:
      case FailoverAction::kReassigned: ++counters_.failovers; break;
      case FailoverAction::kBackupReplaced: ++counters_.backups_replaced; break;
      case FailoverAction::kStranded: ++counters_.stranded; break;
      case FailoverAction::kBackupLost: break;
    }
    log->info("attachment {}: {} ({}): device {} -> {}, backup {}", e.attachment, devpool::failover_action_name(e.action),
              why, e.from_device, e.to_device, e.new_backup);
  }
}

void DevpoolService::forget_device(uint32_t device) {
  auto uid = device_uid_.find(device);
  if (uid != device_uid_.end()) {
    release(devices_per_uid_, uid->second);
    device_uid_.erase(uid);
  }
}

Result<proto::DevRegisterReply> DevpoolService::register_device(uint64_t session, uid_t uid, bool admin,
                                                                const proto::DevRegister& request, uint64_t now_ns) {
  if (auto ok = within_limit(devices_per_uid_, uid, admin, config_.max_devices_per_uid, "devices",
                             "max_devices_per_uid");
      !ok) {
    ++counters_.registrations_refused;
    return tl::unexpected(ok.error());
  }
  devpool::DeviceSpec spec;
  spec.kind = static_cast<DeviceKind>(request.kind);
  spec.name = request.name;
  spec.host = request.host;
  spec.capacity = request.capacity;
  spec.iops = request.iops;
  spec.bandwidth_bps = request.bandwidth_bps;
  std::copy(std::begin(request.mac), std::end(request.mac), spec.mac.begin());
  sync_pod();
  // The device line of a dead device this one replaces is reused.
  std::optional<Device> replaced_before;
  auto decided = decide([&] {
    replaced_before.reset();
    for (const Device& d : allocator_.devices()) {
      if (d.spec.host == spec.host && d.spec.name == spec.name) replaced_before = d;
    }
    return allocator_.register_device(spec, session, now_ns);
  });
  if (!decided) {
    ++counters_.registrations_refused;
    return fail(decided.error().code, "device " + spec.host + "/" + spec.name + ": " + decided.error().message);
  }
  const auto& out = *decided;
  switch (out.status) {
    case devpool::RegisterStatus::kNameTaken: {
      ++counters_.registrations_refused;
      ++counters_.names_taken;
      std::string holder;
      for (const Device& d : state_.devices()) {
        if (d.spec.host != spec.host || d.spec.name != spec.name) continue;
        const std::string member = etcd_ ? etcd_->device_member(d.id) : std::string();
        holder = " as device " + std::to_string(d.id) +
                 (member.empty() || member == etcd_->member() ? std::string(" through this daemon")
                                                             : " through daemon '" + member + "'");
      }
      return fail(EEXIST, "device " + spec.host + "/" + spec.name + " is registered already" + holder);
    }
    case devpool::RegisterStatus::kFull:
      ++counters_.registrations_refused;
      return fail(ENOSPC, "the pod table holds " + std::to_string(config_.max_devices) +
                              " devices already (devpool.max_devices)");
    case devpool::RegisterStatus::kRegistered: break;
  }
  if (out.replaced != devpool::kNoDevice && replaced_before) {
    free_device_line(replaced_before->line, out.replaced);
    forget_device(out.replaced);
    for (auto& [s, devices] : session_devices_) devices.erase(out.replaced);
  }
  const Device device = *state_.device(out.device);
  write_device(device);
  apply(out.repaired, "device joined");
  session_devices_[session].insert(device.id);
  device_uid_[device.id] = uid;
  ++devices_per_uid_[uid];
  ++counters_.registrations;
  logger("devpool")->info("device {} registered: {} {}/{} (session {})", device.id, devpool::device_kind_name(spec.kind),
                          spec.host, spec.name, session);
  proto::DevRegisterReply reply;
  reply.device_id = device.id;
  reply.device_line = device.line;
  reply.lease_ms = config_.lease_ms;
  reply.telemetry_ms = config_.telemetry_ms;
  fill_pod(reply);
  return reply;
}

Result<proto::DevHeartbeatReply> DevpoolService::heartbeat(uint64_t session, const proto::DevHeartbeat& request,
                                                           uint64_t now_ns) {
  auto device = state_.device(request.device_id);
  if (!device || device->owner != session || !made_by(session_devices_, session, request.device_id)) {
    return fail(ENOENT, "no device " + std::to_string(request.device_id) + " of this connection");
  }
  ++counters_.heartbeats;
  devpool::LoadSample sample{now_ns, request.bytes_per_s, request.ops_per_s, request.link_up != 0};
  auto decided = decide([&] { return allocator_.heartbeat(request.device_id, sample, now_ns); });
  if (!decided) {
    // A change of health waits for etcd (the next heartbeat reports it
    // again); the backend is alive all the same.
    state_.put_lease({request.device_id, now_ns + allocator_.config().lease_ns});
    decided = devpool::HeartbeatOutcome{};
  }
  const auto& out = *decided;
  if (out.load_published && etcd_) etcd_->note_load_written();
  if (out.status == devpool::HeartbeatStatus::kExpired) {
    return fail(ESTALE, "device " + std::to_string(request.device_id) +
                            ": its lease ran out and it was failed over; register it again");
  }
  if (out.health_changed) {
    const Device now = *state_.device(request.device_id);
    write_device(now);
    if (now.health == devpool::DeviceHealth::kLinkDown) ++counters_.link_downs;
    apply(out.failover, now.health == devpool::DeviceHealth::kLinkDown ? "link down" : "link up");
  }
  proto::DevHeartbeatReply reply;
  reply.health = static_cast<proto::DevHealth>(state_.device(request.device_id)->health);
  reply.lease_ms = config_.lease_ms;
  reply.table_version = table_version_;
  return reply;
}

Result<proto::DevAttachReply> DevpoolService::attach(uint64_t session, uid_t uid, bool admin,
                                                     const proto::DevAttach& request, uint64_t now_ns) {
  if (auto ok = within_limit(attachments_per_uid_, uid, admin, config_.max_attachments_per_uid, "attachments",
                             "max_attachments_per_uid");
      !ok) {
    ++counters_.attaches_refused;
    return tl::unexpected(ok.error());
  }
  devpool::AttachRequest req{request.host, static_cast<DeviceKind>(request.kind), request.preferred,
                             request.preferred_host};
  sync_pod();
  auto decided = decide([&] { return allocator_.attach(req, session, now_ns); });
  if (!decided) {
    ++counters_.attaches_refused;
    return tl::unexpected(decided.error());
  }
  const auto& out = *decided;
  switch (out.status) {
    case devpool::AttachStatus::kNoDevice:
      ++counters_.attaches_refused;
      return fail(ENODEV, std::string("no healthy ") + devpool::device_kind_name(req.kind) + " device in the pod");
    case devpool::AttachStatus::kFull:
      ++counters_.attaches_refused;
      return fail(ENOSPC, "every link slot of the pod is taken (devpool.link_slots = " +
                              std::to_string(config_.link_slots) + ")");
    case devpool::AttachStatus::kAttached: break;
  }
  const Attachment& a = out.attachment;
  for (const auto& leg : a.legs) format_slot(leg.slot, a.kind);
  write_attachment(a);
  session_attachments_[session].insert(a.id);
  attachment_uid_[a.id] = uid;
  ++attachments_per_uid_[uid];
  ++counters_.attaches;
  logger("devpool")->info("attachment {} for {}: primary device {} (slot {}), backup device {} (slot {})", a.id, a.host,
                          a.primary().device, a.primary().slot, a.backup().device, a.backup().slot);
  proto::DevAttachReply reply;
  reply.attachment_id = a.id;
  reply.line = a.line;
  reply.generation = a.generation;
  reply.active = a.active;
  for (int i = 0; i < 2; ++i) {
    reply.device[i] = a.legs[i].device;
    reply.slot[i] = a.legs[i].slot;
  }
  fill_pod(reply);
  return reply;
}

Result<void> DevpoolService::detach(uint64_t session, uint32_t attachment) {
  auto a = state_.attachment(attachment);
  if (!a || a->owner != session || !made_by(session_attachments_, session, attachment)) {
    return fail(ENOENT, "no attachment " + std::to_string(attachment) + " of this connection");
  }
  // The frontend is done with it whatever etcd says: the pod drops the
  // record when etcd answers again.
  if (!drop_attachment(attachment)) pending_detach_.insert(attachment);
  session_attachments_[session].erase(attachment);
  auto uid = attachment_uid_.find(attachment);
  if (uid != attachment_uid_.end()) {
    release(attachments_per_uid_, uid->second);
    attachment_uid_.erase(uid);
  }
  ++counters_.detaches;
  return {};
}

bool DevpoolService::drop_attachment(uint32_t attachment) {
  auto a = state_.attachment(attachment);
  if (!a) return true;
  auto done = decide([&] { return allocator_.detach(attachment); });
  if (!done) return false;
  if (auto it = mirror_attachments_.find(a->line); it != mirror_attachments_.end() && it->second.id == attachment) {
    free_attachment_line(it->second);
  }
  return true;
}

bool DevpoolService::deregister(uint32_t id, uint64_t now_ns) {
  auto device = state_.device(id);
  if (!device) return true;
  auto report = decide([&] { return allocator_.deregister_device(id, now_ns); });
  if (!report) return false;
  if (auto it = mirror_devices_.find(device->line); it != mirror_devices_.end() && it->second.id == id) {
    free_device_line(device->line, id);
  }
  if (device->health != devpool::DeviceHealth::kDead) ++counters_.session_losses;
  apply(*report, "backend gone");
  return true;
}

void DevpoolService::close_session(uint64_t session, uint64_t now_ns) {
  if (auto it = session_attachments_.find(session); it != session_attachments_.end()) {
    const std::set<uint32_t> attachments = it->second;
    for (uint32_t id : attachments) (void)detach(session, id);
    session_attachments_.erase(session);
  }
  auto it = session_devices_.find(session);
  if (it == session_devices_.end()) return;
  const std::set<uint32_t> devices = it->second;
  session_devices_.erase(it);
  for (uint32_t id : devices) {
    auto device = state_.device(id);
    if (!device) continue;
    logger("devpool")->info("device {} ({}/{}): its backend's connection closed", id, device->spec.host,
                            device->spec.name);
    forget_device(id);
    if (!deregister(id, now_ns)) pending_deregister_.insert(id);
  }
}

void DevpoolService::check_leases(uint64_t now_ns) {
  sync_pod();
  for (uint32_t id : std::set<uint32_t>(pending_deregister_)) {
    if (deregister(id, now_ns)) pending_deregister_.erase(id);
  }
  for (uint32_t id : std::set<uint32_t>(pending_detach_)) {
    if (drop_attachment(id)) pending_detach_.erase(id);
  }
  auto decided = decide([&] { return allocator_.expire(now_ns); });
  if (!decided) return;  // kept until etcd answers: the leases are still there
  const auto& report = *decided;
  for (uint32_t id : report.failed_devices) {
    ++counters_.lease_expiries;
    if (auto d = state_.device(id)) {
      logger("devpool")->warn("device {} ({}/{}): lease expired", id, d->spec.host, d->spec.name);
      write_device(*d);
    }
  }
  apply(report, "lease expired");
}

Result<proto::DevFailoverReply> DevpoolService::failover(uint32_t device, uint64_t now_ns) {
  sync_pod();
  auto decided = decide([&] { return allocator_.drain(device, now_ns); });
  if (!decided) return tl::unexpected(decided.error());
  const auto& report = *decided;
  if (!report) return fail(ENOENT, "no device " + std::to_string(device));
  apply(*report, "admin failover");
  ++counters_.admin_failovers;
  proto::DevFailoverReply reply;
  reply.device_id = device;
  reply.moved = static_cast<uint32_t>(report->events.size());
  for (const Attachment& a : state_.attachments()) reply.without_backup += a.primary().device == device ? 1 : 0;
  return reply;
}

proto::DevListReply DevpoolService::list(uint64_t now_ns) const {
  proto::DevListReply reply;
  reply.enabled = 1;
  reply.failovers = counters_.failovers;
  reply.table_version = table_version_;
  reply.pod_path = pod_.path().string().substr(0, proto::kMaxStringLength);
  reply.state_backend = etcd_ ? "etcd" : "embedded";
  reply.state_connected = 1;
  if (etcd_) {
    const DevpoolStateStatus status = etcd_->status();
    reply.state_connected = status.connected ? 1 : 0;
    reply.state_error = status.last_error.substr(0, proto::kMaxStringLength);
  }
  const auto attachments = state_.attachments();
  for (const Device& d : state_.devices()) {
    if (reply.devices.size() == proto::kMaxListEntries) break;
    proto::DevDeviceEntry e;
    e.id = d.id;
    e.kind = static_cast<proto::DevKind>(d.spec.kind);
    e.health = static_cast<proto::DevHealth>(d.health);
    e.capacity = d.spec.capacity;
    e.iops = d.spec.iops;
    e.bandwidth_bps = d.spec.bandwidth_bps;
    std::copy(d.spec.mac.begin(), d.spec.mac.end(), std::begin(e.mac));
    if (const devpool::DeviceLoad* load = allocator_.load(d.id)) {
      e.load_ppm = static_cast<uint32_t>(std::min(load->ewma(), 4000.0) * 1e6);
      e.bytes_per_s = load->recent(0).bytes_per_s;
      e.ops_per_s = load->recent(0).ops_per_s;
      e.samples = static_cast<uint32_t>(std::min<uint64_t>(load->total_samples(), UINT32_MAX));
    } else if (d.load.samples != 0) {
      // Another daemon's device: the load that daemon last wrote to the pod.
      e.load_ppm = d.load.utilization_ppm;
      e.bytes_per_s = d.load.bytes_per_s;
      e.ops_per_s = d.load.ops_per_s;
      e.samples = d.load.samples;
    }
    for (const Attachment& a : attachments) {
      e.primaries += a.primary().device == d.id ? 1 : 0;
      e.backups += a.backup().device == d.id ? 1 : 0;
    }
    const uint64_t expiry = allocator_.lease_expiry(d.id);
    e.lease_left_ms = expiry > now_ns ? (expiry - now_ns) / 1'000'000 : 0;
    e.client_id = d.owner;
    e.name = d.spec.name;
    e.host = d.spec.host;
    reply.devices.push_back(std::move(e));
  }
  for (const Attachment& a : attachments) {
    if (reply.attachments.size() == proto::kMaxListEntries) break;
    proto::DevAttachmentEntry e;
    e.id = a.id;
    e.kind = static_cast<proto::DevKind>(a.kind);
    e.active = a.active;
    e.generation = a.generation;
    for (int i = 0; i < 2; ++i) {
      e.device[i] = a.legs[i].device;
      e.slot[i] = a.legs[i].slot;
    }
    e.client_id = a.owner;
    e.host = a.host;
    reply.attachments.push_back(std::move(e));
  }
  return reply;
}

void DevpoolService::add_counters(std::vector<proto::Counter>& out) const {
  auto add = [&](std::string name, uint64_t value) { out.push_back({std::move(name), value}); };
  uint64_t healthy = 0;
  const auto devices = state_.devices();
  for (const Device& d : devices) healthy += d.health == devpool::DeviceHealth::kHealthy ? 1 : 0;
  add("devpool.devices", devices.size());
  add("devpool.devices_healthy", healthy);
  add("devpool.attachments", state_.attachments().size());
  add("devpool.hosts", state_.hosts().size());
  emit_counters("devpool.", counters_, add);
  const DevpoolStateStatus status = etcd_ ? etcd_->status() : DevpoolStateStatus{true, 0, {}, {}};
  add("devpool.state_etcd", etcd_ ? 1 : 0);
  add("devpool.state_connected", status.connected ? 1 : 0);
  emit_counters("devpool.state_", status.counters, add);
}

}  // namespace cxlpool::daemon

namespace cxlpool::daemon {

void DevpoolService::sync_pod() {
  if (!etcd_) return;
  etcd_->refresh();
  fail_over_missing_devices();
  mirror_table();
}

void DevpoolService::fail_over_missing_devices() {
  // Devices the pod no longer has while attachments still use them: their
  // daemon died (its lease took the records) or it deregistered them. Every
  // daemon that sees it decides the failover; the first commit wins and the
  // others find nothing left to do.
  std::map<uint32_t, Device> gone;
  for (const auto& [line, d] : mirror_devices_) {
    if (!state_.device(d.id)) gone[d.id] = d;
  }
  for (const Attachment& a : state_.attachments()) {
    for (const auto& leg : a.legs) {
      if (leg.device == devpool::kNoDevice || state_.device(leg.device) || gone.count(leg.device) != 0) continue;
      // Never seen here: a name that matches no device, so that storage
      // gets no backup on some other SSD.
      Device unknown;
      unknown.id = leg.device;
      unknown.spec.kind = a.kind;
      unknown.spec.name = "?";
      gone[leg.device] = unknown;
    }
  }
  for (const auto& [id, last] : gone) {
    auto report = decide([&] { return allocator_.device_gone(last); });
    if (!report) return;  // etcd away: tried again next period
    if (!report->events.empty()) {
      logger("devpool")->info("device {} ({}/{}) left the pod", id, last.spec.host, last.spec.name);
    }
    apply(*report, "device left the pod");
  }
}

void DevpoolService::mirror_table() {
  // Lines other daemons changed: engines on this host read the pod's table
  // from this daemon's pod file.
  std::set<uint32_t> device_lines;
  // A device's line carries its id, kind and health: a record that only
  // took a new load (every second or so) leaves the table alone.
  auto same_line = [](const Device& x, const Device& y) {
    return x.id == y.id && x.line == y.line && x.spec == y.spec && x.health == y.health && x.owner == y.owner;
  };
  for (const Device& d : state_.devices()) {
    device_lines.insert(d.line);
    auto it = mirror_devices_.find(d.line);
    if (it == mirror_devices_.end() || !same_line(it->second, d)) write_device(d);
  }
  for (const auto& [line, d] : std::map<uint32_t, Device>(mirror_devices_)) {
    if (device_lines.count(line) == 0) free_device_line(line, d.id);
  }
  std::set<uint32_t> attachment_lines;
  for (const Attachment& a : state_.attachments()) {
    attachment_lines.insert(a.line);
    auto it = mirror_attachments_.find(a.line);
    if (it != mirror_attachments_.end() && it->second == a) continue;
    for (int i = 0; i < 2; ++i) {
      const bool moved = it == mirror_attachments_.end() || it->second.id != a.id ||
                         it->second.legs[i].device != a.legs[i].device;
      if (moved && a.legs[i].device != devpool::kNoDevice) format_slot(a.legs[i].slot, a.kind);
    }
    write_attachment(a);
  }
  for (const auto& [line, a] : std::map<uint32_t, Attachment>(mirror_attachments_)) {
    if (attachment_lines.count(line) == 0) free_attachment_line(a);
  }
}

}  // namespace cxlpool::daemon
