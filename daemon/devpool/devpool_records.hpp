// SPDX-License-Identifier: Apache-2.0
// The device pool's state in etcd: key layout and the JSON values of its
// records (docs/devpool.md, "State in etcd"). A value read from etcd is input
// like any other: another daemon (another version, or a broken one) wrote
// it, so every field is checked before the allocator sees it.
//
//   <prefix>devices/<line>       a registered device, bound to the lease of
//                                the daemon its backend is connected to
//   <prefix>attachments/<line>   an attachment (its link slots are 2 * line
//                                and 2 * line + 1), bound to the lease of
//                                the daemon its frontend is connected to
//   <prefix>next_id              the next device or attachment id
//
// Keys name table lines, so creating a key only where none exists is what
// keeps two daemons from handing out one line (and its slots) twice.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"
#include "cxlpool/devpool/pod_state.hpp"

namespace cxlpool::daemon {

inline constexpr size_t kMaxDevpoolRecordBytes = 4096;

// "/cxlpool/pods/<pod>/devpool/".
std::string devpool_prefix(std::string_view pod);

enum class DevpoolKeyKind : uint8_t { kDevice, kAttachment, kNextId };
struct DevpoolKey {
  DevpoolKeyKind kind = DevpoolKeyKind::kDevice;
  uint32_t line = 0;  // devices and attachments
  bool operator==(const DevpoolKey&) const = default;
};

std::string devpool_key(std::string_view prefix, const DevpoolKey& key);
// The key under `prefix`; EINVAL for anything else (an unknown kind, a line
// with a sign, leading zeros or more than 9 digits).
Result<DevpoolKey> parse_devpool_key(std::string_view key, std::string_view prefix);

// The pod table's size here: a record naming a line past it is refused
// (daemons of one pod must agree on [devpool] max_devices and link_slots).
struct DevpoolLimits {
  uint32_t max_devices = 0;
  uint32_t max_attachments = 0;
};

struct DeviceRecord {
  devpool::Device device;
  std::string member;  // the daemon the backend is connected to
};
struct AttachmentRecord {
  devpool::Attachment attachment;
  std::string member;  // the daemon the frontend is connected to
};

std::string encode_device_record(const devpool::Device& device, std::string_view member);
// EINVAL naming the field that is wrong; `line` is the one the key names.
Result<DeviceRecord> decode_device_record(std::string_view text, uint32_t line, const DevpoolLimits& limits);

std::string encode_attachment_record(const devpool::Attachment& attachment, std::string_view member);
Result<AttachmentRecord> decode_attachment_record(std::string_view text, uint32_t line, const DevpoolLimits& limits);

std::string encode_next_id(uint32_t next);
// A decimal 1..4294967295.
Result<uint32_t> decode_next_id(std::string_view text);

}  // namespace cxlpool::daemon
