// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/namespace_access.hpp"

#include "cxlpool/common/permission_bits.hpp"

#include <cstdio>

#include "cxlpool/proto/kv_ring.hpp"

namespace cxlpool::kvcache {

Result<std::uint32_t> normalize_kv_mode(std::uint32_t mode) {
  if ((mode & ~kKvNamespaceModeMask) != 0) {
    char octal[16];
    std::snprintf(octal, sizeof octal, "%o", mode);
    return fail(EINVAL, std::string("kv namespace mode 0") + octal +
                            " has bits other than read and write (at most 0666)");
  }
  return mode == 0 ? kKvDefaultNamespaceMode : mode;
}

std::uint8_t kv_rights(const KvNamespaceOwner& owner, const KvAccessor& who) {
  if (who.admin) return kKvRightRead | kKvRightWrite;
  const std::uint32_t bits = permission_bits(owner.mode, owner.uid, owner.gid, who.uid, who.gid, who.groups);
  std::uint8_t rights = 0;
  if (bits & kPermissionRead) rights |= kKvRightRead;
  if (bits & kPermissionWrite) rights |= kKvRightWrite;
  return rights;
}

std::uint8_t kv_rights_needed(std::uint8_t op) {
  switch (static_cast<proto::KvOp>(op)) {
    case proto::KvOp::kLookup:
    case proto::KvOp::kGet:
    case proto::KvOp::kPrefetch: return kKvRightRead;
    case proto::KvOp::kPutBegin:
    case proto::KvOp::kPutCommit:
    case proto::KvOp::kDelete: return kKvRightWrite;
    case proto::KvOp::kRelease: return 0;
  }
  // An op the ring's checks refuse anyway: nothing it could be granted.
  return kKvRightRead | kKvRightWrite;
}

std::string kv_rights_name(std::uint8_t rights) {
  switch (rights & (kKvRightRead | kKvRightWrite)) {
    case kKvRightRead: return "read";
    case kKvRightWrite: return "write";
    case kKvRightRead | kKvRightWrite: return "read and write";
    default: return "no access";
  }
}

void KvRightsTable::grant(std::uint32_t ns_id, std::uint8_t rights) {
  if (ns_id >= rights_.size()) rights_.resize(ns_id + 1, 0);
  rights_[ns_id] |= rights;
}

void KvRightsTable::revoke(std::uint32_t ns_id) {
  if (ns_id < rights_.size()) rights_[ns_id] = 0;
}

}  // namespace cxlpool::kvcache
