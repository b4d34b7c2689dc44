// SPDX-License-Identifier: Apache-2.0
// Command-line quantities: record counts with decimal suffixes ("4M" is four
// million accesses) and durations with units ("4s", "250ms").
#pragma once

#include <cstdint>
#include <string_view>

#include "cxlpool/common/result.hpp"

namespace cxlpool::tracegen {

// "4000000", "4M", "500K", "2G" (10^3, 10^6, 10^9). EINVAL / ERANGE.
Result<std::uint64_t> parse_count(std::string_view text);
// "100ns", "20us", "250ms", "4s"; a bare number is nanoseconds. EINVAL / ERANGE.
Result<std::uint64_t> parse_duration_ns(std::string_view text);

}  // namespace cxlpool::tracegen
