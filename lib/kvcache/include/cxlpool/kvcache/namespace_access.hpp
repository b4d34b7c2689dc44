// SPDX-License-Identifier: Apache-2.0
// Who may use a KV namespace. A namespace has an owner (the uid that first
// opened it, and that uid's primary gid) and a mode of Unix-style read and
// write bits for owner, group and others: r allows lookup, get and prefetch,
// w allows put and delete. The daemon checks an opener against the mode once,
// at KvNamespaceOpen, and remembers the rights it granted in the
// connection's KvRightsTable, which every ring request is checked against
// (no lookup beyond one array index per request). Pure logic: no daemon, no
// sockets.
#pragma once

#include <cerrno>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/kv_status.hpp"

namespace cxlpool::kvcache {

inline constexpr std::uint8_t kKvRightRead = 1;   // lookup, get, prefetch
inline constexpr std::uint8_t kKvRightWrite = 2;  // put_begin, put_commit, delete

// The mode of a namespace opened with mode 0: private to its owner.
inline constexpr std::uint32_t kKvDefaultNamespaceMode = 0600;
// Only read and write bits: a namespace has nothing to execute.
inline constexpr std::uint32_t kKvNamespaceModeMask = 0666;

struct KvNamespaceOwner {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint32_t mode = kKvDefaultNamespaceMode;
};

// The peer asking, as the daemon knows it from SO_PEERCRED.
struct KvAccessor {
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::span<const std::uint32_t> groups;  // supplementary groups
  bool admin = false;                      // the daemon's admins: every right
};

// EINVAL for bits outside kKvNamespaceModeMask (execute bits, setuid...).
// 0 is accepted and means kKvDefaultNamespaceMode.
Result<std::uint32_t> normalize_kv_mode(std::uint32_t mode);

// kKvRightRead | kKvRightWrite as the owner's mode grants them to `who`: the
// owner's bits for its uid, the group's for a member of its gid (primary or
// supplementary), the others' bits for everyone else; every right for an
// admin.
[[nodiscard]] std::uint8_t kv_rights(const KvNamespaceOwner& owner, const KvAccessor& who);

// The rights a ring request of `op` (proto::KvOp) needs; 0 for release,
// which names a lease, not a namespace.
[[nodiscard]] std::uint8_t kv_rights_needed(std::uint8_t op);

// "read", "write", "read and write": for error messages.
[[nodiscard]] std::string kv_rights_name(std::uint8_t rights);

// One connection's rights per namespace id. grant() may allocate (at
// namespace open); rights() never does: it is on the request path.
class KvRightsTable {
 public:
  // Adds `rights` to what the connection holds for `ns_id` (1-based).
  void grant(std::uint32_t ns_id, std::uint8_t rights);
  // Takes every right on `ns_id` away (the namespace changed hands).
  void revoke(std::uint32_t ns_id);
  [[nodiscard]] std::uint8_t rights(std::uint64_t ns_id) const {
    return ns_id < rights_.size() ? rights_[ns_id] : 0;
  }
  // kOk when the connection holds `needed` on ns_id, else kDenied.
  [[nodiscard]] KvStatus check(std::uint64_t ns_id, std::uint8_t needed) const {
    return (rights(ns_id) & needed) == needed ? KvStatus::kOk : KvStatus::kDenied;
  }

 private:
  std::vector<std::uint8_t> rights_;  // index = namespace id
};

}  // namespace cxlpool::kvcache
