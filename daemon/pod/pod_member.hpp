// SPDX-License-Identifier: Apache-2.0
// A pod member's record and the table of members a daemon knows. The record
// is what a daemon publishes about itself under the pod's prefix (in etcd, a
// JSON value whose key lives by the daemon's lease); the table turns full
// listings and single changes into joins and departures.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::daemon {

struct PodTierRecord {
  std::string name;
  std::string kind;  // "dram", "cxl", "emu", ...
  uint64_t capacity = 0;
  bool operator==(const PodTierRecord&) const = default;
};

struct PodMember {
  std::string host;
  std::string provider;  // libfabric provider peers reach it with
  std::string address;   // its fabric address; empty when it offers none
  uint64_t exported_bytes = 0;
  std::vector<PodTierRecord> tiers;
  std::vector<std::string> devices;  // pooled devices it owns
  // Its transfer engine's card (hal::Transport::card(): rails and
  // registered regions); empty when it runs none. Records written before
  // the engine was served have no "card" field.
  std::string card;
  // Filled from etcd, not part of the published value.
  uint64_t lease_id = 0;
  uint64_t create_revision = 0;
  bool operator==(const PodMember&) const = default;
};

// Limits on what a record may hold: a peer's value is input like any other.
inline constexpr size_t kMaxPodRecordBytes = 64 * 1024;
inline constexpr size_t kMaxPodRecordTiers = 64;
inline constexpr size_t kMaxPodRecordDevices = 256;
inline constexpr size_t kMaxPodRecordCard = 48 * 1024;

// "/cxlpool/pods/<pod>/members/": every member's key starts with it.
std::string pod_members_prefix(std::string_view pod);

// The JSON value published for `member` (host, provider, address,
// exported_bytes, tiers, devices, and card when it has one).
std::string encode_pod_member(const PodMember& member);
// Parses and checks a peer's value; `host` is the name its key gives, which
// the value must repeat. EINVAL names the field that is wrong.
Result<PodMember> decode_pod_member(std::string_view json, std::string_view host);

// What a change of the table did.
struct PodMemberChanges {
  std::vector<std::string> joined;
  std::vector<std::string> departed;
  bool empty() const { return joined.empty() && departed.empty(); }
};

class PodMemberTable {
 public:
  // A full listing: whatever is not in it has departed (reconciliation
  // after a watch was lost).
  PodMemberChanges replace(std::vector<PodMember> members);
  // One record written: a join when the host was not known (an update of
  // a known host's record is neither).
  PodMemberChanges put(PodMember member);
  PodMemberChanges erase(const std::string& host);

  std::vector<PodMember> members() const;  // by host
  std::optional<PodMember> find(const std::string& host) const;
  size_t size() const { return members_.size(); }

 private:
  std::map<std::string, PodMember> members_;
};

}  // namespace cxlpool::daemon
