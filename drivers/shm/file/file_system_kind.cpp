// SPDX-License-Identifier: Apache-2.0
#include "file_system_kind.hpp"

#include <linux/magic.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cstdio>

namespace cxlpool::drivers {
namespace {

// The file systems a pod region is usually put on, and the common disk ones
// so a misplaced region is named plainly in the logs.
std::string name_of_magic(unsigned long magic) {
  switch (magic) {
    case TMPFS_MAGIC: return "tmpfs";
    case HUGETLBFS_MAGIC: return "hugetlbfs";
    case EXT4_SUPER_MAGIC: return "ext4";
    case XFS_SUPER_MAGIC: return "xfs";
    case BTRFS_SUPER_MAGIC: return "btrfs";
    case OVERLAYFS_SUPER_MAGIC: return "overlayfs";
    case V9FS_MAGIC: return "9p";
    case NFS_SUPER_MAGIC: return "nfs";
    case SYSFS_MAGIC: return "sysfs";
    default: break;
  }
  char text[32];
  std::snprintf(text, sizeof text, "fs 0x%lx", magic);
  return text;
}

}  // namespace

Result<FileSystemKind> file_system_of(int fd) {
  struct statfs st {};
  if (::fstatfs(fd, &st) != 0) return fail_errno("fstatfs");
  FileSystemKind kind;
  const auto magic = static_cast<unsigned long>(st.f_type);
  kind.name = name_of_magic(magic);
  kind.hugetlbfs = magic == HUGETLBFS_MAGIC;
  // hugetlbfs reports its page size as the block size.
  kind.page_size = kind.hugetlbfs ? static_cast<std::uint64_t>(st.f_bsize)
                                  : static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return kind;
}

}  // namespace cxlpool::drivers
