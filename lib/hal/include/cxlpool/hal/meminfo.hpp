// SPDX-License-Identifier: Apache-2.0
// Parser for /proc/meminfo and /sys/devices/system/node/node<N>/meminfo, which
// share one line shape ("MemTotal:  16384000 kB"); the per-node file prefixes
// every line with "Node <N> ".
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "cxlpool/common/result.hpp"
#include "cxlpool/common/sysfs_root.hpp"

namespace cxlpool::hal {

// Field name → value. "kB" fields are converted to bytes; unitless fields
// (HugePages_Total, HugePages_Free, ...) are plain counts.
using MemInfo = std::map<std::string, uint64_t, std::less<>>;

// `file` only names the source in error messages. EINVAL for a line that is
// not "[Node <N> ]<Name>: <number>[ kB]".
Result<MemInfo> parse_meminfo(std::string_view text, const std::string& file);

// Reads and parses `relative` below `root`. ENOENT when it cannot be read.
Result<MemInfo> read_meminfo(const SysfsRoot& root, const std::string& relative);

// The value of `field`, or EINVAL naming `file` when the field is missing.
Result<uint64_t> meminfo_field(const MemInfo& info, std::string_view field,
                               const std::string& file);

// Memory that can be had without swapping: MemAvailable where the file has
// it (/proc/meminfo), else MemFree plus the page cache and slab the kernel
// can drop (a node's meminfo has no MemAvailable): all of Inactive(file),
// half of Active(file) and half of SReclaimable, the halves as the
// kernel's own estimate keeps back. Free memory alone reads near zero on a
// host whose page cache has filled (after a build, a large read), and
// allocations it could serve would be refused. EINVAL without MemFree.
Result<uint64_t> meminfo_available(const MemInfo& info, const std::string& file);

}  // namespace cxlpool::hal
