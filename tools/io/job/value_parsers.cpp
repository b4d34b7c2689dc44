// SPDX-License-Identifier: Apache-2.0
#include "value_parsers.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace cxlpool::io {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "123abc" into the digits (decimal, or hex after 0x) and the suffix.
Result<std::pair<std::uint64_t, std::string>> number_and_suffix(std::string_view text) {
  text = trim(text);
  if (text.empty()) return fail(EINVAL, "empty value");
  int base = 10;
  std::string_view digits = text;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    digits = text.substr(2);
  }
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
  if (ec == std::errc::result_out_of_range) return fail(EINVAL, "'" + std::string(text) + "' is too large");
  if (ec != std::errc() || end == digits.data()) {
    return fail(EINVAL, "'" + std::string(text) + "' is not a number");
  }
  std::string_view rest(end, static_cast<std::size_t>(digits.data() + digits.size() - end));
  if (!rest.empty() && rest.front() == '.') {
    return fail(EINVAL, "'" + std::string(text) + "': fractional values are not supported");
  }
  return std::pair<std::uint64_t, std::string>{value, lower(trim(rest))};
}

Result<std::uint64_t> checked_multiply(std::uint64_t value, std::uint64_t mult, std::string_view text) {
  if (mult != 0 && value > std::numeric_limits<std::uint64_t>::max() / mult) {
    return fail(EINVAL, "'" + std::string(text) + "' is too large");
  }
  return value * mult;
}

Result<std::uint32_t> parse_block_size(std::string_view text, std::uint32_t kb_base) {
  auto bytes = parse_size(text, kb_base);
  if (!bytes) return tl::unexpected(bytes.error());
  if (*bytes == 0) return fail(EINVAL, "block size must be greater than 0");
  if (*bytes > std::numeric_limits<std::uint32_t>::max()) {
    return fail(EINVAL, "block size '" + std::string(text) + "' is larger than 4 GiB - 1");
  }
  return static_cast<std::uint32_t>(*bytes);
}

}  // namespace

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    std::size_t at = text.find(separator, start);
    if (at == std::string_view::npos) {
      parts.push_back(text.substr(start));
      return parts;
    }
    parts.push_back(text.substr(start, at - start));
    start = at + 1;
  }
}

Result<std::uint64_t> parse_size(std::string_view text, std::uint32_t kb_base) {
  auto parsed = number_and_suffix(text);
  if (!parsed) return tl::unexpected(parsed.error());
  const auto& [value, suffix] = *parsed;
  if (suffix.empty() || suffix == "b") return value;
  if (suffix.find('%') != std::string::npos) {
    return fail(EINVAL, "percentages ('" + std::string(trim(text)) + "') are not supported by cxlpool-io");
  }
  static constexpr std::string_view kPrefixes = "kmgtp";
  std::size_t power = kPrefixes.find(suffix[0]);
  std::string_view unit = std::string_view(suffix).substr(1);
  if (power == std::string_view::npos || !(unit.empty() || unit == "b" || unit == "i" || unit == "ib")) {
    return fail(EINVAL, "'" + std::string(trim(text)) + "': unknown size suffix '" + suffix + "'");
  }
  // fio's compatibility rule: with kb_base=1024 the IEC spelling ("KiB")
  // means powers of 1000 and the SI spelling powers of 1024; kb_base=1000
  // gives both their standard meaning.
  std::uint64_t base = kb_base;
  if (unit == "ib") base = kb_base == 1024 ? 1000 : 1024;
  std::uint64_t mult = 1;
  for (std::size_t i = 0; i <= power; ++i) mult *= base;
  return checked_multiply(value, mult, text);
}

Result<std::uint64_t> parse_uint(std::string_view text) {
  auto parsed = number_and_suffix(text);
  if (!parsed) return tl::unexpected(parsed.error());
  if (!parsed->second.empty()) return fail(EINVAL, "'" + std::string(trim(text)) + "' is not a whole number");
  return parsed->first;
}

Result<double> parse_double(std::string_view text) {
  text = trim(text);
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || !std::isfinite(value)) {
    return fail(EINVAL, "'" + std::string(text) + "' is not a number");
  }
  return value;
}

Result<std::uint64_t> parse_time_ns(std::string_view text, std::uint64_t default_unit_ns) {
  auto parsed = number_and_suffix(text);
  if (!parsed) return tl::unexpected(parsed.error());
  const auto& [value, suffix] = *parsed;
  std::uint64_t unit = 0;
  if (suffix.empty()) unit = default_unit_ns;
  else if (suffix == "ns" || suffix == "nsec") unit = 1;
  else if (suffix == "us" || suffix == "usec") unit = 1000;
  else if (suffix == "ms" || suffix == "msec") unit = 1000000;
  else if (suffix == "s" || suffix == "sec") unit = 1000000000ull;
  else if (suffix == "m" || suffix == "min") unit = 60ull * 1000000000ull;
  else if (suffix == "h" || suffix == "hour") unit = 3600ull * 1000000000ull;
  else if (suffix == "d" || suffix == "day") unit = 86400ull * 1000000000ull;
  else return fail(EINVAL, "'" + std::string(trim(text)) + "': unknown time suffix '" + suffix + "'");
  return checked_multiply(value, unit, text);
}

Result<bool> parse_bool(std::optional<std::string_view> text) {
  if (!text) return true;
  auto value = trim(*text);
  if (value == "1") return true;
  if (value == "0") return false;
  return fail(EINVAL, "'" + std::string(value) + "' is not 0 or 1");
}

Result<std::vector<std::optional<std::string>>> split_directions(std::string_view text) {
  auto parts = split(text, ',');
  if (parts.size() > 2) {
    if (parts.size() == 3 && trim(parts[2]).empty()) {
      parts.pop_back();  // "8k,32k," leaves trims at their default, which cxlpool-io never issues
    } else {
      return fail(EINVAL, "a third (trim) value is not supported by cxlpool-io");
    }
  }
  std::vector<std::optional<std::string>> out(2);
  auto field = [](std::string_view part) -> std::optional<std::string> {
    part = trim(part);
    if (part.empty()) return std::nullopt;
    return std::string(part);
  };
  out[0] = field(parts[0]);
  // One value sets both directions; "a," sets reads only.
  out[1] = parts.size() == 1 ? out[0] : field(parts[1]);
  if (!out[0] && !out[1]) return fail(EINVAL, "no value");
  return out;
}

Result<std::vector<BlockSizeShare>> parse_bssplit(std::string_view text, std::uint32_t kb_base) {
  std::vector<BlockSizeShare> shares;
  std::vector<bool> missing;
  std::uint32_t total = 0;
  for (auto entry : split(text, ':')) {
    entry = trim(entry);
    if (entry.empty()) return fail(EINVAL, "empty entry in '" + std::string(text) + "'");
    auto slash = entry.find('/');
    auto bytes = parse_block_size(entry.substr(0, slash), kb_base);
    if (!bytes) return tl::unexpected(bytes.error());
    BlockSizeShare share{*bytes, 0};
    bool has_percent = slash != std::string_view::npos && !trim(entry.substr(slash + 1)).empty();
    if (has_percent) {
      auto percent = parse_uint(entry.substr(slash + 1));
      if (!percent) return tl::unexpected(percent.error());
      if (*percent > 100) return fail(EINVAL, "percentage " + std::to_string(*percent) + " is over 100");
      share.percent = static_cast<std::uint32_t>(*percent);
      total += share.percent;
    }
    shares.push_back(share);
    missing.push_back(!has_percent);
  }
  if (shares.size() > 64) return fail(EINVAL, "more than 64 block sizes");
  if (total > 100) return fail(EINVAL, "percentages add up to " + std::to_string(total) + ", over 100");
  auto n_missing = static_cast<std::uint32_t>(std::count(missing.begin(), missing.end(), true));
  if (n_missing == 0 && total != 100) {
    return fail(EINVAL, "percentages add up to " + std::to_string(total) + ", not 100");
  }
  if (n_missing > 0) {
    std::uint32_t left = 100 - total;
    std::uint32_t each = left / n_missing;
    std::uint32_t extra = left - each * n_missing;
    for (std::size_t i = 0; i < shares.size(); ++i) {
      if (!missing[i]) continue;
      shares[i].percent = each + (extra > 0 ? 1 : 0);
      if (extra > 0) --extra;
    }
  }
  // A 0% share can never be picked; dropping it keeps "0 = unset" unambiguous.
  std::erase_if(shares, [](const BlockSizeShare& s) { return s.percent == 0; });
  if (shares.empty()) return fail(EINVAL, "no block size has a share");
  return shares;
}

Result<SizeRange> parse_bsrange(std::string_view text, std::uint32_t kb_base) {
  auto dash = text.find('-');
  if (dash == std::string_view::npos) return fail(EINVAL, "'" + std::string(text) + "' is not min-max");
  auto lo = parse_block_size(text.substr(0, dash), kb_base);
  if (!lo) return tl::unexpected(lo.error());
  auto hi = parse_block_size(text.substr(dash + 1), kb_base);
  if (!hi) return tl::unexpected(hi.error());
  if (*lo > *hi) return fail(EINVAL, "minimum is larger than maximum in '" + std::string(text) + "'");
  return SizeRange{*lo, *hi};
}

Result<std::vector<double>> parse_percentile_list(std::string_view text) {
  std::vector<double> out;
  for (auto part : split(text, ':')) {
    auto value = parse_double(part);
    if (!value) return tl::unexpected(value.error());
    if (*value <= 0 || *value > 100) {
      return fail(EINVAL, "percentile " + std::string(trim(part)) + " is outside (0, 100]");
    }
    out.push_back(*value);
  }
  if (out.size() > 20) return fail(EINVAL, "more than 20 percentiles");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<DistributionSpec> parse_distribution(std::string_view text) {
  auto colon = text.find(':');
  std::string name = lower(trim(text.substr(0, colon)));
  if (name == "zoned") {
    if (colon == std::string_view::npos) return fail(EINVAL, "'zoned' needs zones (zoned:access%/range%:...)");
    auto zones = parse_zones(text.substr(colon + 1));
    if (!zones) return tl::unexpected(zones.error());
    DistributionSpec spec;
    spec.kind = Distribution::kZoned;
    spec.zones = std::move(*zones);
    return spec;
  }
  std::optional<double> param;
  if (colon != std::string_view::npos) {
    std::string_view rest = text.substr(colon + 1);
    if (rest.find(':') != std::string_view::npos) {
      return fail(EINVAL, "a second distribution parameter (center) is not supported by cxlpool-io");
    }
    auto value = parse_double(rest);
    if (!value) return tl::unexpected(value.error());
    param = *value;
  }
  DistributionSpec spec;
  if (name == "random") {
    if (param) return fail(EINVAL, "'random' takes no parameter");
    return spec;
  }
  if (name == "zipf") {
    spec.kind = Distribution::kZipf;
    spec.param = param.value_or(1.1);
    if (spec.param <= 0 || spec.param == 1.0) return fail(EINVAL, "zipf theta must be > 0 and not 1.0");
    return spec;
  }
  if (name == "pareto") {
    spec.kind = Distribution::kPareto;
    spec.param = param.value_or(0.2);
    if (spec.param <= 0 || spec.param >= 1) return fail(EINVAL, "pareto h must be in (0, 1)");
    return spec;
  }
  if (name == "normal" || name == "gauss") {
    spec.kind = Distribution::kNormal;
    spec.param = param.value_or(0.0);
    if (spec.param < 0 || spec.param >= 100) return fail(EINVAL, "normal deviation must be in [0, 100)");
    return spec;
  }
  if (name == "zoned_abs") {
    return fail(EINVAL, "'zoned_abs' is not supported by cxlpool-io (random, zipf, pareto, normal, zoned)");
  }
  return fail(EINVAL, "unknown distribution '" + name + "' (random, zipf, pareto, normal, zoned)");
}

Result<RwSpec> parse_rw_spec(std::string_view text, std::uint32_t kb_base) {
  text = trim(text);
  const auto colon = text.find(':');
  const std::string_view name = trim(text.substr(0, colon));
  RwSpec spec;
  if (auto mode = rw_mode_from_name(name)) {
    spec.mode = *mode;
  } else if (name == "trim" || name == "randtrim" || name == "trimwrite" || name == "randtrimwrite") {
    return fail(EINVAL, "'" + std::string(name) + "' is not supported by cxlpool-io (no trims)");
  } else {
    return fail(EINVAL, "'" + std::string(name) + "' is not one of read, write, randread, randwrite, rw, randrw");
  }
  if (colon == std::string_view::npos) return spec;
  std::string_view modifier = trim(text.substr(colon + 1));
  if (is_random(spec.mode)) {
    // fio: the number of I/Os before a new random offset is drawn.
    auto n = parse_uint(modifier);
    if (!n) return tl::unexpected(n.error());
    if (*n == 0 || *n > 0xffffffffu) return fail(EINVAL, "the random run in '" + std::string(text) + "' must be 1 or more");
    spec.random_run = static_cast<std::uint32_t>(*n);
    return spec;
  }
  const bool backwards = !modifier.empty() && modifier.front() == '-';
  if (backwards) modifier.remove_prefix(1);
  auto bytes = parse_size(modifier, kb_base);
  if (!bytes) return tl::unexpected(bytes.error());
  if (*bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    return fail(EINVAL, "the offset modifier in '" + std::string(text) + "' is too large");
  spec.seq_skip = backwards ? -static_cast<std::int64_t>(*bytes) : static_cast<std::int64_t>(*bytes);
  return spec;
}

Result<std::vector<AccessZone>> parse_zones(std::string_view text) {
  text = trim(text);
  if (text.find(',') != std::string_view::npos)
    return fail(EINVAL, "separate zones for reads and writes are not supported by cxlpool-io");
  std::vector<AccessZone> zones;
  double access = 0, range = 0;
  int open_ranges = 0;
  for (std::string_view entry : split(text, ':')) {
    entry = trim(entry);
    const auto slash = entry.find('/');
    if (slash == std::string_view::npos) return fail(EINVAL, "zone '" + std::string(entry) + "' is not access%/range%");
    auto a = parse_double(entry.substr(0, slash));
    if (!a) return tl::unexpected(a.error());
    AccessZone zone;
    zone.access_percent = *a;
    const std::string_view r = trim(entry.substr(slash + 1));
    if (r.empty()) {
      zone.range_percent = -1;  // filled below with what the others leave
      ++open_ranges;
    } else {
      auto v = parse_double(r);
      if (!v) return tl::unexpected(v.error());
      zone.range_percent = *v;
      range += *v;
    }
    if (zone.access_percent <= 0 || zone.range_percent == 0 || zone.range_percent > 100)
      return fail(EINVAL, "zone '" + std::string(entry) + "' needs access and range percentages above 0");
    access += zone.access_percent;
    zones.push_back(zone);
  }
  if (open_ranges > 1) return fail(EINVAL, "only one zone may leave its range empty");
  if (std::fabs(access - 100.0) > 1e-6) return fail(EINVAL, "zone access percentages add up to " + std::to_string(access) + ", not 100");
  if (range > 100.0 + 1e-6) return fail(EINVAL, "zone ranges add up to more than 100%");
  for (auto& zone : zones) {
    if (zone.range_percent < 0) {
      if (range >= 100.0) return fail(EINVAL, "the zone without a range gets nothing (the others cover 100%)");
      zone.range_percent = 100.0 - range;
    }
  }
  return zones;
}

}  // namespace cxlpool::io
