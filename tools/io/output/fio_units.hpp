// SPDX-License-Identifier: Apache-2.0
// Number formatting as fio's human summary prints it ("28.4k", "111MiB/s",
// "4096KiB"): at most `max_digits` digits before the unit prefix, decimals
// only where they fit.
#pragma once

#include <cstdint>
#include <string>

namespace cxlpool::io {

enum class UnitBase { kDecimal, kBinary };

// "28.4k" for (28400, 4, kDecimal); "111Mi" for (116508000, 4, kBinary).
// The caller appends the unit ("B/s", "iB"...): binary prefixes come with
// their 'i' ("Ki", "Mi").
std::string scaled_number(std::uint64_t value, int max_digits, UnitBase base);

// Latency display unit chosen like fio's summary: values shown in the
// largest of nsec/usec/msec that keeps the minimum above a couple of units.
struct LatencyUnit {
  const char* name;      // "nsec", "usec", "msec"
  double divisor;        // ns per displayed unit
};
LatencyUnit latency_unit_for(std::uint64_t min_ns, std::uint64_t max_ns);

}  // namespace cxlpool::io
