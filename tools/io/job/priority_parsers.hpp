// SPDX-License-Identifier: Apache-2.0
// fio's per-I/O priority values: cmdprio_bssplit's
// "bs/percent[/class/level]:..." list for one direction.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "job_spec.hpp"

namespace cxlpool::io {

// Highest class and level ioprio_set(2) takes: classes 0 (none) to 3
// (idle), levels 0 (highest) to 7.
inline constexpr int kMaxPrioClass = 3;
inline constexpr int kMaxPrioLevel = 7;

// "64k/25/1/1:64k/75/3/2:1024k/0" or "64k/100:1024k/0": entries without
// class and level take cmdprio_class/cmdprio (class -1 here). Percentages
// of one block size may not exceed 100.
Result<std::vector<PrioritySplit>> parse_cmdprio_bssplit(std::string_view text, std::uint32_t kb_base);

}  // namespace cxlpool::io
