// SPDX-License-Identifier: Apache-2.0
// How large a checkpoint of a process will be, known before it is frozen:
// the image stores the process's anonymous pages that are present or
// swapped (its heap and stacks, and the pages it changed in private file
// mappings, which copy-on-write made anonymous), a header page and a
// manifest. The daemon checks this against the owner's quota before a
// capture, so that `--kill` does not end a process whose image the quota
// then refuses; the finished image's size is checked again, exactly.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::daemon {

// Bytes an image of a process with this /proc/PID/smaps_rollup text at
// least takes: (Anonymous + Swap) plus the header page. EINVAL when either
// line is missing or malformed.
Result<uint64_t> image_estimate_from_smaps_rollup(std::string_view text);

// The same for a live process (ESRCH when it is gone).
Result<uint64_t> image_estimate(pid_t pid);

}  // namespace cxlpool::daemon
