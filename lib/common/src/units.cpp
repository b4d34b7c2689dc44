// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/units.hpp"

#include <cctype>
#include <charconv>
#include <cstdio>
#include <limits>

namespace cxlpool {

Result<uint64_t> parse_size(std::string_view text) {
  const std::string original(text);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  uint64_t number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || ptr == text.data()) return fail(EINVAL, "not a size: '" + original + "'");
  std::string_view unit(ptr, text.data() + text.size() - ptr);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  uint64_t mult = 1;
  if (unit.empty() || unit == "B") {
    mult = 1;
  } else if (unit == "K" || unit == "KiB" || unit == "k") {
    mult = kKiB;
  } else if (unit == "M" || unit == "MiB") {
    mult = kMiB;
  } else if (unit == "G" || unit == "GiB") {
    mult = kGiB;
  } else if (unit == "T" || unit == "TiB") {
    mult = kGiB * 1024;
  } else {
    return fail(EINVAL, "unknown size unit in '" + original + "' (use B, K, M, G, T or KiB, MiB, GiB, TiB)");
  }
  if (number > std::numeric_limits<uint64_t>::max() / mult) {
    return fail(ERANGE, "size overflows 64 bits: '" + original + "'");
  }
  return number * mult;
}

std::string format_size(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  if (unit == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", value, kUnits[unit]);
  }
  return buf;
}

}  // namespace cxlpool
