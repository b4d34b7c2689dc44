// SPDX-License-Identifier: Apache-2.0
// Parsers for the /proc/PID files a checkpoint reads, apart from the reading
// so that they are tested on fixed text: smaps (VMAs and their flags),
// status (credentials, umask, seccomp), stat (the mm fields) and fdinfo.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

struct SmapsEntry {
  uint64_t start = 0, end = 0;
  std::string perms;  // "rw-p"
  uint64_t offset = 0;
  uint64_t inode = 0;
  std::string path;   // "" for anonymous memory; "[heap]", "/usr/lib/x.so", "/memfd:a (deleted)"
  std::vector<std::string> vm_flags;  // the two-letter VmFlags ("rd", "gd", "dc", ...)

  bool has_flag(std::string_view flag) const;
};

// /proc/PID/smaps (or maps: then vm_flags stay empty). EIO on a line that is
// not a VMA header or a "Key: value" line.
[[nodiscard]] Result<std::vector<SmapsEntry>> parse_smaps(std::string_view text);

struct StatusFields {
  char state = '?';
  uint32_t umask = 022;
  bool has_umask = false;
  uint32_t uid[4] = {}, gid[4] = {};  // real, effective, saved, filesystem
  std::vector<uint32_t> groups;
  uint64_t cap_inheritable = 0, cap_permitted = 0, cap_effective = 0, cap_bounding = 0, cap_ambient = 0;
  uint32_t no_new_privs = 0;
  uint32_t seccomp = 0;
};

// /proc/PID/status. EIO when Uid, Gid or the capability lines are missing.
[[nodiscard]] Result<StatusFields> parse_status(std::string_view text);

// The mm fields of /proc/PID/stat (start_code .. env_end; not brk, which stat
// does not show). EIO when the line is cut short.
[[nodiscard]] Result<MmFields> parse_stat_mm(std::string_view text);

struct FdInfo {
  uint64_t pos = 0;
  uint32_t flags = 0;  // O_* as the kernel keeps them (octal in the file)
  // An eventfd's lines; has_* false where the file (or this kernel) lacks them.
  bool has_eventfd_count = false, has_eventfd_id = false, has_eventfd_semaphore = false;
  uint64_t eventfd_count = 0;  // "eventfd-count", hex
  uint64_t eventfd_id = 0;     // "eventfd-id", decimal: the same for dups of one eventfd
  bool eventfd_semaphore = false;
};

// /proc/PID/fdinfo/N. EIO without pos and flags, or with an eventfd line
// that is not a number.
[[nodiscard]] Result<FdInfo> parse_fdinfo(std::string_view text);

// /proc/PID/limits: {soft, hard} per resource in RLIMIT_* order
// ("unlimited" is RLIM_INFINITY), the first `count` rows. EIO when a row is
// missing or not numbers in the kernel's columns.
[[nodiscard]] Result<std::vector<std::array<uint64_t, 2>>> parse_limits(std::string_view text, size_t count);

}  // namespace cxlpool::ckpt
