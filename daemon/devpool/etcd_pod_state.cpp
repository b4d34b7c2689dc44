// SPDX-License-Identifier: Apache-2.0
#include "etcd_pod_state.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "../logging.hpp"
#include "../pod/pod_auth.hpp"

namespace cxlpool::daemon {
namespace {

constexpr uint32_t kRetryMs = 250;  // after a failed etcd request

template <typename Map>
auto records_of(const Map& map) {
  std::vector<decltype(map.begin()->second.record)> out;
  out.reserve(map.size());
  for (const auto& [id, entry] : map) out.push_back(entry.record);
  return out;
}

// The entry of `map` on table line `line`, or end().
template <typename Map>
auto on_line(Map& map, uint32_t line) {
  return std::find_if(map.begin(), map.end(), [&](const auto& kv) { return kv.second.record.line == line; });
}

}  // namespace

EtcdPodState::EtcdPodState(const PodSection& pod, std::string member, const DevpoolLimits& limits)
    : pod_(pod),
      member_(std::move(member)),
      prefix_(devpool_prefix(pod.name)),
      limits_(limits),
      client_(pod.etcd_endpoints, std::chrono::milliseconds(pod.etcd_timeout_ms)) {
  if (!pod.etcd_user.empty()) {
    // Checked at start (check_config_on_host); a file gone since fails the authentication.
    client_.set_credentials(pod.etcd_user, load_etcd_password(pod.etcd_password_file, ::geteuid()).value_or(""));
  }
  logger("devpool")->info("device pool state in etcd under {} (member '{}')", prefix_, member_);
  session_ = std::thread([this] { session_loop(); });
  const auto idle_limit = std::chrono::milliseconds(std::max<uint32_t>(pod.lease_ttl_s, 2) * 1000);
  watcher_ = std::make_unique<EtcdFollower>(
      client_, prefix_, idle_limit,
      EtcdFollower::Handlers{[this](EtcdRange&& listing) {
                               std::lock_guard lock(mutex_);
                               incoming_.emplace_back(Listing{std::move(listing)});
                               if (listed_before_) ++thread_counters_.resyncs;
                               listed_before_ = true;
                               note_success(false);
                             },
                             [this](const std::vector<EtcdEvent>& events) {
                               std::lock_guard lock(mutex_);
                               incoming_.emplace_back(events);
                             },
                             [this](const Error& error) { note_error(error, false); }});
}

EtcdPodState::~EtcdPodState() { stop(); }

void EtcdPodState::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_ && !session_.joinable() && !watcher_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.reset();
  if (session_.joinable()) session_.join();
  uint64_t lease = 0;
  {
    std::lock_guard lock(mutex_);
    lease = std::exchange(lease_, 0);
  }
  // The lease takes this daemon's devices and attachments with it: peers
  // fail over now rather than a TTL later.
  if (lease != 0) {
    if (auto ok = client_.revoke(lease); !ok) {
      logger("devpool")->warn("device pool state: lease {:x} not revoked ({}); peers drop its records within {} s",
                              lease, ok.error().message, pod_.lease_ttl_s);
    }
  }
}

// ------------------------------------------------------------------ view

std::optional<devpool::Device> EtcdPodState::device(uint32_t id) const {
  auto it = devices_.find(id);
  if (it == devices_.end()) return std::nullopt;
  return it->second.record;
}

std::vector<devpool::Device> EtcdPodState::devices() const { return records_of(devices_); }

void EtcdPodState::put_device(const devpool::Device& device) {
  auto [it, fresh] = devices_.try_emplace(device.id);
  it->second.record = device;
  if (fresh) it->second.member = member_;
}

void EtcdPodState::erase_device(uint32_t id) { devices_.erase(id); }

std::optional<devpool::Attachment> EtcdPodState::attachment(uint32_t id) const {
  auto it = attachments_.find(id);
  if (it == attachments_.end()) return std::nullopt;
  return it->second.record;
}

std::vector<devpool::Attachment> EtcdPodState::attachments() const { return records_of(attachments_); }

void EtcdPodState::put_attachment(const devpool::Attachment& attachment) {
  auto [it, fresh] = attachments_.try_emplace(attachment.id);
  it->second.record = attachment;
  if (fresh) it->second.member = member_;
}

void EtcdPodState::erase_attachment(uint32_t id) { attachments_.erase(id); }

std::vector<devpool::Host> EtcdPodState::hosts() const {
  std::map<std::string, devpool::Host> all = hosts_;
  for (const auto& [id, e] : devices_) all.try_emplace(e.record.spec.host, devpool::Host{e.record.spec.host, 0});
  for (const auto& [id, e] : attachments_) all.try_emplace(e.record.host, devpool::Host{e.record.host, 0});
  std::vector<devpool::Host> out;
  for (auto& [name, host] : all) out.push_back(host);
  return out;
}

std::optional<devpool::Lease> EtcdPodState::lease(uint32_t device) const {
  auto it = leases_.find(device);
  if (it == leases_.end()) return std::nullopt;
  return it->second;
}

std::vector<devpool::Lease> EtcdPodState::leases() const {
  std::vector<devpool::Lease> out;
  for (const auto& [id, lease] : leases_) out.push_back(lease);
  return out;
}

uint32_t EtcdPodState::next_id() {
  // Never below an id the pod uses, whatever the counter says.
  uint32_t id = next_id_;
  for (const auto& [known, e] : devices_) id = std::max(id, known + 1);
  for (const auto& [known, e] : attachments_) id = std::max(id, known + 1);
  next_id_ = id + 1;
  next_id_taken_ = true;
  return id;
}

std::string EtcdPodState::device_member(uint32_t id) const {
  auto it = devices_.find(id);
  return it == devices_.end() ? std::string() : it->second.member;
}

std::string EtcdPodState::attachment_member(uint32_t id) const {
  auto it = attachments_.find(id);
  return it == attachments_.end() ? std::string() : it->second.member;
}

std::string EtcdPodState::key_of_device(uint32_t line) const {
  return devpool_key(prefix_, {DevpoolKeyKind::kDevice, line});
}

std::string EtcdPodState::key_of_attachment(uint32_t line) const {
  return devpool_key(prefix_, {DevpoolKeyKind::kAttachment, line});
}

// ------------------------------------------------------------ decisions

void EtcdPodState::begin() {
  saved_ = Saved{devices_, attachments_, hosts_, leases_, next_id_, next_id_taken_};
  next_id_taken_ = false;
}

void EtcdPodState::rollback() {
  if (!saved_) return;
  devices_ = std::move(saved_->devices);
  attachments_ = std::move(saved_->attachments);
  hosts_ = std::move(saved_->hosts);
  leases_ = std::move(saved_->leases);
  next_id_ = saved_->next_id;
  next_id_taken_ = saved_->next_id_taken;
  saved_.reset();
}

uint64_t EtcdPodState::current_lease() const {
  std::lock_guard lock(mutex_);
  return lease_;
}

bool EtcdPodState::connected() const {
  std::lock_guard lock(mutex_);
  return health_.connected() && lease_ != 0;
}

Result<void> EtcdPodState::commit() {
  if (!saved_) return {};
  // What the decision changed, key by key: a record the pod had is
  // rewritten or deleted only if nobody changed it since (its mod
  // revision), a new one is created only where no key is.
  struct Write {
    EtcdWrite write;
    std::string member;
  };
  std::vector<EtcdCompare> compares;
  std::vector<Write> writes;
  const uint64_t lease = current_lease();
  bool creates = false;  // a record with a new id
  auto diff = [&](const auto& before_map, const auto& after_map, auto key_of, auto encode) {
    std::set<uint32_t> lines;
    for (const auto& [id, e] : before_map) lines.insert(e.record.line);
    for (const auto& [id, e] : after_map) lines.insert(e.record.line);
    for (uint32_t line : lines) {
      auto before = on_line(before_map, line);
      auto after = on_line(after_map, line);
      const bool had = before != before_map.end();
      const bool has = after != after_map.end();
      if (had && has && before->second.record == after->second.record && before->second.member == after->second.member) {
        continue;
      }
      const std::string key = key_of(line);
      if (had) {
        compares.push_back({key, false, before->second.mod_revision});
      } else {
        compares.push_back({key, true, 0});
      }
      if (has) {
        const auto& e = after->second;
        // A rewritten record keeps the lease of the daemon it belongs to.
        const bool same = had && before->second.record.id == e.record.id;
        creates = creates || !same;
        writes.push_back({{key, false, encode(e.record, e.member), same ? before->second.lease : lease}, e.member});
      } else if (had) {
        writes.push_back({{key, true, {}, 0}, before->second.member});
      }
    }
  };
  diff(saved_->devices, devices_, [&](uint32_t l) { return key_of_device(l); }, encode_device_record);
  diff(saved_->attachments, attachments_, [&](uint32_t l) { return key_of_attachment(l); },
       encode_attachment_record);
  const std::string id_key = devpool_key(prefix_, {DevpoolKeyKind::kNextId, 0});
  // Every new record takes an id, so the id counter is compared by its
  // revision: no other daemon created a record since this view was read.
  // That is what makes a device's host/name unique in the pod (two daemons
  // registering one name at once: one commit wins, the other decides again
  // and finds the name taken), not only its line.
  if (next_id_taken_ || creates) compares.push_back({id_key, next_id_revision_ == 0, next_id_revision_});
  if (next_id_taken_) writes.push_back({{id_key, false, encode_next_id(next_id_), 0}, ""});
  if (writes.empty()) {
    saved_.reset();
    return {};
  }
  std::string why;
  {
    std::lock_guard lock(mutex_);
    if (!(health_.connected() && lease_ != 0)) why = health_.last_error().empty() ? "not connected yet" : health_.last_error();
  }
  for (const Write& w : writes) {
    if (!w.write.erase && w.write.lease == 0 && w.write.key != id_key && why.empty()) why = "no lease held yet";
  }
  if (!why.empty()) {
    rollback();
    return fail(EHOSTUNREACH, "device pool state in etcd unreachable: " + why);
  }
  std::vector<EtcdWrite> plain;
  for (const Write& w : writes) plain.push_back(w.write);
  auto result = client_.txn(compares, plain);
  if (!result) {
    note_error(result.error(), true);
    rollback();
    return fail(EHOSTUNREACH, "device pool state in etcd unreachable: " + result.error().message);
  }
  if (!result->succeeded) {
    ++view_counters_.conflicts;
    rollback();
    if (auto ok = resync(); !ok) return fail(EHOSTUNREACH, "device pool state in etcd: " + ok.error().message);
    return fail(EAGAIN, "another daemon of the pod changed the device pool meanwhile");
  }
  const uint64_t rev = result->revision;
  for (const Write& w : writes) {
    key_revision_[w.write.key] = rev;
    if (w.write.key == id_key) continue;
    if (w.write.erase) {
      own_.erase(w.write.key);
    } else if (w.member == member_) {
      own_[w.write.key] = w.write.value;
    }
  }
  auto stamp = [&](auto& map, auto key_of) {
    for (auto& [id, e] : map) {
      for (const Write& w : writes) {
        if (!w.write.erase && w.write.key == key_of(e.record.line)) {
          e.mod_revision = rev;
          e.lease = w.write.lease;
        }
      }
    }
  };
  stamp(devices_, [&](uint32_t l) { return key_of_device(l); });
  stamp(attachments_, [&](uint32_t l) { return key_of_attachment(l); });
  if (next_id_taken_) next_id_revision_ = rev;
  next_id_taken_ = false;
  ++view_counters_.commits;
  saved_.reset();
  return {};
}

// ---------------------------------------------------- folding changes in

bool EtcdPodState::apply_kv(const EtcdKeyValue& kv, bool deleted) {
  auto key = parse_devpool_key(kv.key, prefix_);
  auto refuse = [&](const std::string& why) {
    ++view_counters_.records_refused;
    logger("devpool")->warn("device pool state: {} refused: {}", kv.key, why);
    return false;
  };
  if (!key) return refuse(key.error().message);
  if (key->kind == DevpoolKeyKind::kNextId) {
    if (deleted) {
      next_id_revision_ = 0;
      return true;
    }
    auto next = decode_next_id(kv.value);
    if (!next) return refuse(next.error().message);
    next_id_ = *next;
    next_id_revision_ = kv.mod_revision;
    return true;
  }
  const bool device = key->kind == DevpoolKeyKind::kDevice;
  // Whatever held the line before goes; the new record (if valid) takes it.
  if (device) {
    if (auto it = on_line(devices_, key->line); it != devices_.end()) devices_.erase(it);
  } else if (auto it = on_line(attachments_, key->line); it != attachments_.end()) {
    attachments_.erase(it);
  }
  if (deleted) return true;
  if (device) {
    auto record = decode_device_record(kv.value, key->line, limits_);
    if (!record) return refuse(record.error().message);
    if (devices_.count(record->device.id) != 0 || attachments_.count(record->device.id) != 0) {
      return refuse("id " + std::to_string(record->device.id) + " is another record's");
    }
    devices_[record->device.id] = {record->device, record->member, kv.lease, kv.mod_revision};
    if (record->member == member_) own_[kv.key] = kv.value;
  } else {
    auto record = decode_attachment_record(kv.value, key->line, limits_);
    if (!record) return refuse(record.error().message);
    if (devices_.count(record->attachment.id) != 0 || attachments_.count(record->attachment.id) != 0) {
      return refuse("id " + std::to_string(record->attachment.id) + " is another record's");
    }
    attachments_[record->attachment.id] = {record->attachment, record->member, kv.lease, kv.mod_revision};
    if (record->member == member_) own_[kv.key] = kv.value;
  }
  return true;
}

void EtcdPodState::apply_listing(const EtcdRange& range) {
  devices_.clear();
  attachments_.clear();
  key_revision_.clear();
  next_id_revision_ = 0;
  listing_revision_ = range.revision;
  for (const EtcdKeyValue& kv : range.kvs) {
    key_revision_[kv.key] = kv.mod_revision;
    apply_kv(kv, false);
  }
}

void EtcdPodState::apply_event(const EtcdEvent& event) {
  // Older than what a listing or this daemon's own commit showed: stale.
  auto seen = key_revision_.find(event.kv.key);
  const uint64_t known = seen == key_revision_.end() ? listing_revision_ : seen->second;
  if (event.kv.mod_revision != 0 && event.kv.mod_revision <= known) return;
  key_revision_[event.kv.key] = event.kv.mod_revision;
  apply_kv(event.kv, event.deleted);
}

Result<void> EtcdPodState::resync() {
  auto listing = client_.range_prefix(prefix_);
  if (!listing) {
    note_error(listing.error(), false);
    return tl::unexpected(listing.error());
  }
  apply_listing(*listing);
  ++view_counters_.resyncs;
  return {};
}

bool EtcdPodState::refresh() {
  std::vector<Incoming> incoming;
  {
    std::lock_guard lock(mutex_);
    incoming.swap(incoming_);
  }
  if (incoming.empty() && own_.empty()) return false;
  for (Incoming& item : incoming) {
    if (auto* listing = std::get_if<Listing>(&item)) {
      // A listing older than what the view already holds (a commit came
      // after it) would take the view back: list afresh instead.
      uint64_t newest = listing_revision_;
      for (const auto& [key, rev] : key_revision_) newest = std::max(newest, rev);
      if (listing->range.revision < newest) {
        (void)resync();
      } else {
        apply_listing(listing->range);
      }
      continue;
    }
    for (const EtcdEvent& e : std::get<std::vector<EtcdEvent>>(item)) apply_event(e);
  }
  republish();
  return !incoming.empty();
}

std::string EtcdPodState::held_elsewhere(const DevpoolKey& key, const std::string& value) const {
  if (key.kind == DevpoolKeyKind::kDevice) {
    if (auto e = on_line(devices_, key.line); e != devices_.end() && e->second.member != member_) {
      return "its line holds device " + std::to_string(e->second.record.id) + " of daemon '" + e->second.member + "'";
    }
    auto mine = decode_device_record(value, key.line, limits_);
    if (!mine) return mine.error().message;
    for (const auto& [id, e] : devices_) {
      const devpool::Device& d = e.record;
      if (e.member != member_ && d.spec.host == mine->device.spec.host && d.spec.name == mine->device.spec.name &&
          d.health != devpool::DeviceHealth::kDead) {
        return "its name was registered again through daemon '" + e.member + "' (device " + std::to_string(id) + ")";
      }
    }
  } else if (key.kind == DevpoolKeyKind::kAttachment) {
    if (auto e = on_line(attachments_, key.line); e != attachments_.end() && e->second.member != member_) {
      return "its line holds attachment " + std::to_string(e->second.record.id) + " of daemon '" + e->second.member +
             "'";
    }
  }
  return {};
}

void EtcdPodState::republish() {
  // Only while etcd answers: the event loop must not wait on timeouts.
  if (own_.empty() || !connected()) return;
  const uint64_t lease = current_lease();
  const std::string id_key = devpool_key(prefix_, {DevpoolKeyKind::kNextId, 0});
  bool listed = false;
  for (auto it = own_.begin(); it != own_.end();) {
    auto key = parse_devpool_key(it->first, prefix_);
    bool present = false;
    if (key && key->kind == DevpoolKeyKind::kDevice) {
      auto e = on_line(devices_, key->line);
      present = e != devices_.end() && e->second.member == member_;
    } else if (key && key->kind == DevpoolKeyKind::kAttachment) {
      auto e = on_line(attachments_, key->line);
      present = e != attachments_.end() && e->second.member == member_;
    }
    if (!key || present) {
      ++it;
      continue;
    }
    // Gone from etcd (this daemon's lease expired while etcd was out of
    // reach): written again under the lease held now, if nobody took its
    // line -- or, for a device, its host/name -- meanwhile.
    if (const std::string why = held_elsewhere(*key, it->second); !why.empty()) {
      logger("devpool")->warn("device pool state: {} dropped: {} (taken while this daemon was away)", it->first, why);
      it = own_.erase(it);
      continue;
    }
    std::vector<EtcdCompare> compares{{it->first, true, 0}};
    // A registration through another daemon moves the id counter: unchanged
    // since the view was read, nobody took the name.
    if (key->kind == DevpoolKeyKind::kDevice) compares.push_back({id_key, next_id_revision_ == 0, next_id_revision_});
    auto result = client_.txn(compares, {{it->first, false, it->second, lease}});
    if (!result) {
      note_error(result.error(), true);
      return;
    }
    if (!result->succeeded) {
      // The view is behind: read the pod once and look again (the line or
      // the name may be another's now); still no luck: the next refresh.
      if (listed) {
        ++it;
        continue;
      }
      listed = true;
      if (!resync()) return;
      continue;
    }
    ++view_counters_.republished;
    logger("devpool")->info("device pool state: {} written again (lease {:x})", it->first, lease);
    key_revision_[it->first] = result->revision;
    apply_kv({it->first, it->second, lease, result->revision, result->revision}, false);
    ++it;
  }
}

// --------------------------------------------------------------- threads

DevpoolStateStatus EtcdPodState::status() const {
  std::lock_guard lock(mutex_);
  DevpoolStateStatus s;
  s.connected = health_.connected() && lease_ != 0;
  s.lease_id = lease_;
  s.last_error = health_.last_error();
  s.counters = view_counters_;
  s.counters.etcd_errors += thread_counters_.etcd_errors;
  s.counters.resyncs += thread_counters_.resyncs;
  return s;
}

bool EtcdPodState::wait_connected(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return wake_.wait_for(lock, timeout, [&] { return stopping_ || (health_.connected() && lease_ != 0); }) &&
         !stopping_;
}

bool EtcdPodState::pause(uint32_t ms) {
  std::unique_lock lock(mutex_);
  wake_.wait_for(lock, std::chrono::milliseconds(ms), [&] { return stopping_; });
  return !stopping_;
}

void EtcdPodState::note_error(const Error& error, bool session) {
  std::lock_guard lock(mutex_);
  ++thread_counters_.etcd_errors;
  if (health_.failed(session, error.message)) {
    logger("devpool")->warn("device pool state: etcd: {}; devices and attachments are not handed out until it "
                            "answers, local work goes on", error.message);
  }
}

void EtcdPodState::note_success(bool session) {
  // Called with mutex_ held.
  const bool was_logged = health_.answered(session);
  wake_.notify_all();
  if (was_logged) logger("devpool")->info("device pool state: etcd answers again ({})", session ? "lease" : "listing");
}

void EtcdPodState::session_loop() {
  const uint32_t period_ms = std::max<uint32_t>(pod_.lease_ttl_s * 1000 / 3, 100);
  for (;;) {
    uint64_t lease;
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      lease = lease_;
    }
    bool ok = true;
    uint32_t wait_ms = period_ms;
    if (lease == 0) {
      auto granted = client_.grant(pod_.lease_ttl_s);
      if (granted) {
        std::lock_guard lock(mutex_);
        lease_ = *granted;
        note_success(true);
        logger("devpool")->info("device pool state: lease {:x} (ttl {} s)", lease_, pod_.lease_ttl_s);
      } else {
        note_error(granted.error(), true);
        ok = false;
      }
    } else {
      auto ttl = client_.keepalive(lease);
      if (!ttl) {
        note_error(ttl.error(), true);
        ok = false;
      } else if (*ttl <= 0) {
        // Expired while etcd was out of reach: this daemon's records went
        // with it; a new lease, and refresh() writes them again.
        std::lock_guard lock(mutex_);
        logger("devpool")->warn("device pool state: lease {:x} expired; taking a new one", lease_);
        lease_ = 0;
        wait_ms = 0;
      } else {
        std::lock_guard lock(mutex_);
        note_success(true);
      }
    }
    if (!pause(ok ? wait_ms : std::min(kRetryMs, period_ms))) return;
  }
}

}  // namespace cxlpool::daemon
