// SPDX-License-Identifier: Apache-2.0
#include "fio_units.hpp"

#include <fmt/format.h>

namespace cxlpool::io {

namespace {
int digits_of(std::uint64_t v) {
  int d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}
}  // namespace

std::string scaled_number(std::uint64_t value, int max_digits, UnitBase base) {
  static const char* const kDecimalPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char* const kBinaryPrefix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  const std::uint64_t step = base == UnitBase::kBinary ? 1024 : 1000;
  const auto* prefixes = base == UnitBase::kBinary ? kBinaryPrefix : kDecimalPrefix;

  std::uint64_t whole = value;
  std::uint64_t rest = 0;
  bool scaled = false;
  int index = 0;
  while (digits_of(whole) > max_digits && index < 6) {
    rest = whole % step;
    whole /= step;
    scaled = true;
    ++index;
  }
  if (!scaled) return fmt::format("{}{}", whole, prefixes[index]);

  const int room = max_digits - digits_of(whole);
  if (room <= 1) {
    // No space for ".d": round to the nearest whole unit.
    if (rest * 2 >= step) ++whole;
    return fmt::format("{}{}", whole, prefixes[index]);
  }
  // Fraction of the next unit, to room-1 decimals, truncated as fio does.
  const double fraction = static_cast<double>(rest) / static_cast<double>(step);
  std::uint64_t scale = 1;
  for (int i = 0; i < room - 1; ++i) scale *= 10;
  auto decimals = static_cast<std::uint64_t>(fraction * static_cast<double>(scale));
  if (decimals == 0) return fmt::format("{}{}", whole, prefixes[index]);
  std::string frac = fmt::format("{:0{}}", decimals, room - 1);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  return fmt::format("{}.{}{}", whole, frac, prefixes[index]);
}

LatencyUnit latency_unit_for(std::uint64_t min_ns, std::uint64_t max_ns) {
  // Switch up a unit only when even the smallest value reads well in it and
  // the largest would need many digits in the smaller one.
  if (min_ns >= 2'000'000 && max_ns >= 100'000'000) return {"msec", 1e6};
  if (min_ns >= 2'000 && max_ns >= 100'000) return {"usec", 1e3};
  return {"nsec", 1.0};
}

}  // namespace cxlpool::io
