// SPDX-License-Identifier: Apache-2.0
// What the pod allocator knows about the pod: devices, hosts, attachments
// and leases, behind an interface. A single-host (embedded) pod keeps them
// in the daemon's memory (EmbeddedPodState); a multi-host pod keeps them in
// a shared store (etcd, in the daemon), which is why the allocator never
// holds a pointer into the state and reads and writes whole records by id.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::devpool {

enum class DeviceKind : uint8_t {
  kNet = 0,  // a NIC: capacity is its link speed in bit/s
  kBlk = 1,  // an SSD: capacity in bytes, plus nominal IOPS and bandwidth
};

enum class DeviceHealth : uint8_t {
  kHealthy = 0,
  kLinkDown = 1,  // a NIC whose backend reports the link down; back when it is up
  kDead = 2,      // its lease expired (a hung backend); it must register again
};

const char* device_kind_name(DeviceKind kind);
const char* device_health_name(DeviceHealth health);

inline constexpr uint32_t kNoDevice = 0;  // device ids start at 1
inline constexpr uint32_t kNoSlot = 0xffffffffu;

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kNet;
  std::string name;  // unique per host ("eth1", "nvme0n1")
  std::string host;  // the host (network namespace) that owns the device
  uint64_t capacity = 0;       // net: link speed, bit/s; blk: bytes
  uint64_t iops = 0;           // blk: nominal operations per second
  uint64_t bandwidth_bps = 0;  // blk: nominal bytes per second
  std::array<uint8_t, 6> mac{};  // net only
  bool operator==(const DeviceSpec&) const = default;
};

// A device's load as its allocator last wrote it to the state (rate-limited:
// PodAllocator::heartbeat), so that allocators of other daemons sharing the
// state balance on it. The daemon its backend reports to keeps the fresher
// figures (DeviceLoad) and ranks by those.
struct PublishedLoad {
  uint32_t utilization_ppm = 0;  // EWMA of the utilization, parts per million of capacity
  uint64_t bytes_per_s = 0;      // the last sample's
  uint64_t ops_per_s = 0;
  uint32_t samples = 0;          // samples its daemon had taken by then; 0: never published
  bool operator==(const PublishedLoad&) const = default;
};

struct Device {
  uint32_t id = kNoDevice;
  uint32_t line = 0;  // its line in the pod table
  DeviceSpec spec;
  DeviceHealth health = DeviceHealth::kHealthy;
  uint64_t owner = 0;  // the backend's session
  uint64_t registered_ns = 0;
  PublishedLoad load;
  bool operator==(const Device&) const = default;
};

// One frontend's use of one kind of device: two legs, each a device and the
// link slot the frontend shares with it. legs[active] carries the traffic,
// the other is the reserved backup (kNoDevice when none could be found).
// The slots belong to the attachment for its lifetime; a leg that changes
// device keeps its slot, which is formatted again.
struct AttachmentLeg {
  uint32_t device = kNoDevice;
  uint32_t slot = kNoSlot;
  bool operator==(const AttachmentLeg&) const = default;
};

struct Attachment {
  uint32_t id = 0;
  uint32_t line = 0;  // its line in the pod table; its slots are 2 * line and 2 * line + 1
  std::string host;   // the frontend's host
  DeviceKind kind = DeviceKind::kNet;
  AttachmentLeg legs[2];
  uint8_t active = 0;       // 0 or 1
  uint32_t generation = 1;  // bumped whenever a leg or `active` changes
  uint64_t owner = 0;       // the frontend's session
  uint64_t attached_ns = 0;
  const AttachmentLeg& primary() const { return legs[active]; }
  const AttachmentLeg& backup() const { return legs[active ^ 1]; }
  bool operator==(const Attachment&) const = default;
};

struct Host {
  std::string name;
  uint64_t first_seen_ns = 0;
  bool operator==(const Host&) const = default;
};

struct Lease {
  uint32_t device = kNoDevice;
  uint64_t expires_ns = 0;
  bool operator==(const Lease&) const = default;
};

class PodState {
 public:
  virtual ~PodState() = default;

  virtual std::optional<Device> device(uint32_t id) const = 0;
  virtual std::vector<Device> devices() const = 0;  // by id
  virtual void put_device(const Device& device) = 0;
  virtual void erase_device(uint32_t id) = 0;

  virtual std::optional<Attachment> attachment(uint32_t id) const = 0;
  virtual std::vector<Attachment> attachments() const = 0;  // by id
  virtual void put_attachment(const Attachment& attachment) = 0;
  virtual void erase_attachment(uint32_t id) = 0;

  virtual std::vector<Host> hosts() const = 0;  // by name
  virtual void put_host(const Host& host) = 0;

  virtual std::optional<Lease> lease(uint32_t device) const = 0;
  virtual std::vector<Lease> leases() const = 0;  // by device id
  virtual void put_lease(const Lease& lease) = 0;
  virtual void erase_lease(uint32_t device) = 0;

  // A fresh id for a device or an attachment, never handed out before.
  virtual uint32_t next_id() = 0;

  // One decision's writes as a unit, for a state other allocators share:
  // begin() before the allocator's call, commit() after it. commit() fails
  // with EAGAIN when another allocator changed what the decision rests on
  // (the state then holds the store's newer records: decide again), or
  // another errno when the store cannot be reached; either way the
  // decision's writes are undone. rollback() undoes them without trying.
  // The embedded state has no one to disagree with: its writes are final
  // at once.
  virtual void begin() {}
  virtual Result<void> commit() { return {}; }
  virtual void rollback() {}
};

// The single-pod state, in memory.
class EmbeddedPodState final : public PodState {
 public:
  std::optional<Device> device(uint32_t id) const override;
  std::vector<Device> devices() const override;
  void put_device(const Device& device) override { devices_[device.id] = device; }
  void erase_device(uint32_t id) override { devices_.erase(id); }

  std::optional<Attachment> attachment(uint32_t id) const override;
  std::vector<Attachment> attachments() const override;
  void put_attachment(const Attachment& attachment) override { attachments_[attachment.id] = attachment; }
  void erase_attachment(uint32_t id) override { attachments_.erase(id); }

  std::vector<Host> hosts() const override;
  void put_host(const Host& host) override { hosts_[host.name] = host; }

  std::optional<Lease> lease(uint32_t device) const override;
  std::vector<Lease> leases() const override;
  void put_lease(const Lease& lease) override { leases_[lease.device] = lease; }
  void erase_lease(uint32_t device) override { leases_.erase(device); }

  uint32_t next_id() override { return next_id_++; }

 private:
  std::map<uint32_t, Device> devices_;
  std::map<uint32_t, Attachment> attachments_;
  std::map<std::string, Host> hosts_;
  std::map<uint32_t, Lease> leases_;
  uint32_t next_id_ = 1;
};

}  // namespace cxlpool::devpool
