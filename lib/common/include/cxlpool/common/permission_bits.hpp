// SPDX-License-Identifier: Apache-2.0
// The rwx bits of a Unix mode that apply to a peer, as the kernel picks them
// for a file without ACLs: the owner's bits for the owner's uid, the group's
// for a member of the owner's gid (primary or supplementary), the others'
// otherwise. Shared by everything the daemon gives an owner and a mode
// (named regions, weights regions, KV namespaces).
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

namespace cxlpool {

inline constexpr std::uint32_t kPermissionRead = 04;
inline constexpr std::uint32_t kPermissionWrite = 02;

[[nodiscard]] inline std::uint32_t permission_bits(std::uint32_t mode, std::uint32_t owner_uid,
                                                   std::uint32_t owner_gid, std::uint32_t uid, std::uint32_t gid,
                                                   std::span<const std::uint32_t> groups) {
  if (uid == owner_uid) return (mode >> 6) & 07;
  if (gid == owner_gid || std::find(groups.begin(), groups.end(), owner_gid) != groups.end()) {
    return (mode >> 3) & 07;
  }
  return mode & 07;
}

}  // namespace cxlpool
