// SPDX-License-Identifier: Apache-2.0
// The pod allocator: which backend device serves which frontend, with a
// reserved backup, and what happens when a device goes away.
//
//   register    a backend announces a device; it holds a lease that each
//               heartbeat renews (a heartbeat carries the device's load)
//   attach      a frontend asks for a device of a kind: the least loaded
//               healthy device relative to its capacity (or the one it
//               prefers) becomes its primary, the next best on another
//               device -- preferably on another host -- its backup; each
//               leg gets a link slot of the pod region
//   failure     a device whose backend's session closed, whose lease
//               expired or (a NIC) whose link went down: every attachment
//               using it as primary switches to its backup, and every leg
//               on it gets a new device where one is free
//   admin       failover of a device moves its attachments to their backups
//
// Pure decisions: time is a parameter, state is behind PodState, and the
// outcomes a caller must expect (no device, no backup, table full) are
// values, not errors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cxlpool/devpool/device_load.hpp"
#include "cxlpool/devpool/pod_state.hpp"

namespace cxlpool::devpool {

struct AllocatorConfig {
  uint64_t lease_ns = 1'000'000'000;  // a device not heard from for this long is dead
  uint32_t max_devices = 64;          // device lines of the pod table
  uint32_t max_attachments = 32;      // attachment lines; each takes two link slots
  // Load an attachment is assumed to add to its primary before telemetry
  // shows it, so that attachments made in a burst spread out.
  uint64_t net_attachment_bps = 1'000'000'000;       // bit/s
  uint64_t blk_attachment_bytes_s = 100'000'000;     // bytes/s
  // How often a device's load is written to the state (Device::load), for
  // the allocators of other daemons sharing it: the first sample at once,
  // then when the utilization moved by load_publish_noise_ppm or more and
  // load_publish_ns passed since the last write, or sooner (but not before
  // load_publish_min_ns) when it moved by load_publish_step_ppm or more.
  // So a device costs a shared store at most one write per
  // load_publish_min_ns, one per load_publish_ns while its load drifts,
  // none while it holds steady. load_publish_ns = 0: never written.
  uint64_t load_publish_ns = 1'000'000'000;
  uint64_t load_publish_min_ns = 250'000'000;
  uint32_t load_publish_noise_ppm = 10'000;  // one point of utilization
  uint32_t load_publish_step_ppm = 100'000;  // ten points
};

enum class RegisterStatus : uint8_t {
  kRegistered,
  kNameTaken,  // a live device of that name on that host is registered
  kFull,       // max_devices devices registered
};

enum class HeartbeatStatus : uint8_t {
  kRenewed,
  kUnknown,  // no such device (deregistered)
  kExpired,  // its lease had run out: the backend must register again
};

enum class AttachStatus : uint8_t {
  kAttached,
  kNoDevice,  // no healthy device of the kind
  kFull,      // every attachment line (and its link slots) is taken
};

struct AttachRequest {
  std::string host;
  DeviceKind kind = DeviceKind::kNet;
  std::string preferred;       // a device name; empty: balance
  std::string preferred_host;  // its host; empty: any host with that name
};

struct AttachOutcome {
  AttachStatus status = AttachStatus::kAttached;
  Attachment attachment;       // when attached
  bool preferred_used = false; // the preferred device became the primary
};

// What became of one attachment when a device failed or was drained.
enum class FailoverAction : uint8_t {
  kSwitched,        // its backup became its primary
  kBackupReplaced,  // the backup leg moved to another device
  kBackupLost,      // the backup leg has no device now (none was free)
  kReassigned,      // primary lost and no backup: a new primary was found
  kStranded,        // primary lost and nothing could replace it
};
struct FailoverEvent {
  uint32_t attachment = 0;
  FailoverAction action = FailoverAction::kSwitched;
  uint32_t from_device = kNoDevice;
  uint32_t to_device = kNoDevice;
  uint32_t new_backup = kNoDevice;
};
struct FailoverReport {
  std::vector<uint32_t> failed_devices;  // devices that went out of service
  std::vector<FailoverEvent> events;
  // Attachments whose lines changed (generation bumped), for the pod table.
  std::vector<Attachment> changed;
  // Legs that moved to another device: their slots need formatting again.
  std::vector<uint32_t> slots_to_format;
  bool empty() const { return failed_devices.empty() && events.empty(); }
};

struct RegisterOutcome {
  RegisterStatus status = RegisterStatus::kRegistered;
  uint32_t device = kNoDevice;
  uint32_t replaced = kNoDevice;  // a dead device of the same name this one replaced
  FailoverReport repaired;        // attachments that lacked a leg and got this device
};

struct HeartbeatOutcome {
  HeartbeatStatus status = HeartbeatStatus::kRenewed;
  FailoverReport failover;  // a NIC whose link went down
  bool health_changed = false;
  bool load_published = false;  // the device's record took its current load
};

const char* failover_action_name(FailoverAction action);

class PodAllocator {
 public:
  PodAllocator(PodState& state, AllocatorConfig config);

  const AllocatorConfig& config() const { return config_; }
  uint32_t link_slots() const { return config_.max_attachments * 2; }

  RegisterOutcome register_device(const DeviceSpec& spec, uint64_t owner, uint64_t now_ns);
  // The backend's session closed: the device is gone at once.
  FailoverReport deregister_device(uint32_t device, uint64_t now_ns);
  HeartbeatOutcome heartbeat(uint32_t device, const LoadSample& sample, uint64_t now_ns);
  // A device that left the pod without this allocator deciding it (in a
  // shared state: its host died and the store dropped its record): every
  // leg on it fails over as after deregister_device(). `last` is the
  // device as last seen (its name keeps a storage backup on the same
  // SSD); the device is removed from the state if it is still there.
  FailoverReport device_gone(const Device& last);
  // Devices whose lease ran out by now_ns: dead, and failed over.
  FailoverReport expire(uint64_t now_ns);
  // Admin: attachments whose primary is `device` switch to their backups
  // (those without a healthy backup stay). False for an unknown device.
  std::optional<FailoverReport> drain(uint32_t device, uint64_t now_ns);

  AttachOutcome attach(const AttachRequest& request, uint64_t owner, uint64_t now_ns);
  // The attachment's line and slots are free again. False when unknown.
  bool detach(uint32_t attachment);

  // Load telemetry of a device this allocator's heartbeats fed; nullptr
  // before its first sample (and for a device another daemon serves: its
  // load is the one in its record, Device::load).
  const DeviceLoad* load(uint32_t device) const;
  // The score attach ranks by: utilization (EWMA: this allocator's own
  // figure where it has one, else the one the device's record carries)
  // plus the nominal load of the attachments that use it as primary.
  double score(const Device& device) const;

  std::vector<Device> devices() const { return state_.devices(); }
  std::vector<Attachment> attachments() const { return state_.attachments(); }
  uint64_t lease_expiry(uint32_t device) const;

 private:
  // Takes `device` out of service and fails its attachments over.
  FailoverReport fail_device(uint32_t device, bool remove);
  FailoverReport fail_legs(const Device& device, bool remove);
  // Gives legs without a device (stranded primaries, lost backups) one,
  // where a healthy device is free: after a device joins or comes back.
  FailoverReport repair();
  void note_host(const std::string& host, uint64_t now_ns);
  // The best healthy device of `kind` outside `exclude`; with `avoid_host`
  // set, devices on other hosts first. With `same_device` set, storage
  // takes only another path to the device of that name (the same SSD
  // reached from another host): a different SSD holds other data.
  std::optional<Device> pick(DeviceKind kind, const std::vector<uint32_t>& exclude,
                             const std::string& avoid_host, const std::string& same_device = std::string()) const;
  uint32_t primaries_on(uint32_t device) const;
  std::optional<uint32_t> free_line(const std::vector<uint32_t>& used, uint32_t limit) const;
  bool load_publish_due(const Device& device, const DeviceLoad& load, uint64_t now_ns) const;

  PodState& state_;
  AllocatorConfig config_;
  std::map<uint32_t, DeviceLoad> load_;
  std::map<uint32_t, uint64_t> load_published_ns_;  // when each device's load was last written
};

}  // namespace cxlpool::devpool
