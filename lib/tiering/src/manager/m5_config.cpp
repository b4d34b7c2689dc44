// SPDX-License-Identifier: Apache-2.0
// M5Config knobs: names, parsing, printing and the rules each value obeys.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "cxlpool/common/enum_names.hpp"
#include "cxlpool/tiering/count_min_sketch.hpp"
#include "cxlpool/tiering/hot_page_tracker.hpp"
#include "cxlpool/tiering/hot_word_tracker.hpp"
#include "cxlpool/tiering/m5_manager.hpp"
#include "knob_value.hpp"

namespace cxlpool::tiering {
namespace {

using manager::format_number;
using manager::format_scaled;

constexpr std::uint64_t kNsPerMs = 1'000'000;
constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kMinPeriodNs = 1'000;                   // 1 us
constexpr std::uint64_t kMaxPeriodNs = 3'600'000'000'000ULL;    // 1 h
constexpr std::uint64_t kMinRateBytes = 4096;                   // one page per second
constexpr std::uint64_t kMaxRateBytes = (1ULL << 20) * kMiB;    // 1 TiB/s
constexpr std::uint32_t kMaxMinAccesses = 1u << 30;
constexpr std::uint32_t kMaxBatchPages = 1u << 20;
constexpr double kMaxFrequencyHz = 1e6;

constexpr EnumName<NominatorMode> kNominatorNames[] = {
    {NominatorMode::kHpt, "hpt"},
    {NominatorMode::kHwt, "hwt"},
};

// What parsing a value can say; the caller adds the key.
using ParseError = std::optional<std::string>;

ParseError set_u32(std::uint32_t& field, std::string_view text) {
  const auto v = manager::parse_unsigned(text);
  if (!v) return "is not an unsigned integer";
  // Every u32 knob's range ends below UINT32_MAX: a clamped value fails it.
  field = *v > std::numeric_limits<std::uint32_t>::max() ? std::numeric_limits<std::uint32_t>::max()
                                                         : static_cast<std::uint32_t>(*v);
  return std::nullopt;
}

ParseError set_double(double& field, std::string_view text) {
  const auto v = manager::parse_number(text);
  if (!v) return "is not a number";
  field = *v;
  return std::nullopt;
}

// A non-negative number of `unit`s stored as an integer count of base units.
ParseError set_scaled(std::uint64_t& field, std::string_view text, std::uint64_t unit) {
  const auto v = manager::parse_number(text);
  if (!v) return "is not a number";
  if (*v < 0) return "must not be negative";
  const double base = *v * static_cast<double>(unit);
  field = base >= 9e18 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(std::llround(base));
  return std::nullopt;
}

std::string in_range(std::uint64_t lo, std::uint64_t hi) {
  return "must be in " + std::to_string(lo) + ".." + std::to_string(hi);
}

struct Knob {
  std::string_view name;
  ParseError (*parse)(M5Config&, std::string_view);
  std::string (*get)(const M5Config&);
  // The rule the current value breaks, if any.
  std::optional<std::string> (*rule)(const M5Config&);
};

// An unsigned count whose rule is the closed range [kLo, kHi].
template <std::uint32_t M5Config::*kField, std::uint64_t kLo, std::uint64_t kHi>
constexpr Knob count_knob(std::string_view name) {
  return {name, [](M5Config& c, std::string_view t) { return set_u32(c.*kField, t); },
          [](const M5Config& c) { return std::to_string(c.*kField); },
          [](const M5Config& c) -> std::optional<std::string> {
            if (std::clamp<std::uint64_t>(c.*kField, kLo, kHi) != c.*kField) return in_range(kLo, kHi);
            return std::nullopt;
          }};
}

enum class PeriodEnd { kMin, kMax };

// One end of the [min_period_ms, max_period_ms] range: given in ms, kept in
// ns, within [kMinPeriodNs, kMaxPeriodNs], and not past the other end.
template <std::uint64_t M5Config::*kField, PeriodEnd kEnd>
constexpr Knob period_knob(std::string_view name) {
  return {name, [](M5Config& c, std::string_view t) { return set_scaled(c.*kField, t, kNsPerMs); },
          [](const M5Config& c) { return format_scaled(c.*kField, kNsPerMs); },
          [](const M5Config& c) -> std::optional<std::string> {
            if (c.*kField < kMinPeriodNs || c.*kField > kMaxPeriodNs) {
              return "must be in " + format_scaled(kMinPeriodNs, kNsPerMs) + ".." +
                     format_scaled(kMaxPeriodNs, kNsPerMs);
            }
            if (c.min_period_ns > c.max_period_ns) {
              return kEnd == PeriodEnd::kMin ? "must not exceed max_period_ms " + format_scaled(c.max_period_ns, kNsPerMs)
                                             : "must not be below min_period_ms " + format_scaled(c.min_period_ns, kNsPerMs);
            }
            return std::nullopt;
          }};
}

const std::array<Knob, 16> kKnobs = {{
    {"nominator",
     [](M5Config& c, std::string_view t) -> ParseError {
       const auto mode = enum_from_name(kNominatorNames, t);
       if (!mode) return "must be hpt or hwt";
       c.nominator = *mode;
       return std::nullopt;
     },
     [](const M5Config& c) -> std::string {
       const char* name = enum_name(kNominatorNames, c.nominator, nullptr);
       return name != nullptr ? name : std::to_string(static_cast<int>(c.nominator));
     },
     [](const M5Config& c) -> std::optional<std::string> {
       if (enum_name(kNominatorNames, c.nominator, nullptr) == nullptr) return "must be hpt or hwt";
       return std::nullopt;
     }},
    count_knob<&M5Config::sketch_rows, 1, CountMinSketch::kMaxRows>("sketch_rows"),
    {"sketch_width", [](M5Config& c, std::string_view t) { return set_u32(c.sketch_width, t); },
     [](const M5Config& c) { return std::to_string(c.sketch_width); },
     [](const M5Config& c) -> std::optional<std::string> {
       if (!std::has_single_bit(c.sketch_width) || c.sketch_width < CountMinSketch::kMinWidth ||
           c.sketch_width > CountMinSketch::kMaxWidth) {
         return "must be a power of two in " + std::to_string(CountMinSketch::kMinWidth) + ".." +
                std::to_string(CountMinSketch::kMaxWidth);
       }
       return std::nullopt;
     }},
    count_knob<&M5Config::top_k, 1, HotPageTracker::kMaxTopK>("top_k"),
    count_knob<&M5Config::hwt_capacity, 1, HotWordTracker::kMaxCapacity>("hwt_capacity"),
    count_knob<&M5Config::sparse_max_words, 0, 64>("sparse_max_words"),
    {"promote_sparse",
     [](M5Config& c, std::string_view t) -> ParseError {
       const auto v = manager::parse_bool(t);
       if (!v) return "must be true or false";
       c.promote_sparse = *v;
       return std::nullopt;
     },
     [](const M5Config& c) -> std::string { return c.promote_sparse ? "true" : "false"; },
     [](const M5Config&) -> std::optional<std::string> { return std::nullopt; }},
    count_knob<&M5Config::min_accesses, 1, kMaxMinAccesses>("min_accesses"),
    {"base_frequency_hz", [](M5Config& c, std::string_view t) { return set_double(c.base_frequency_hz, t); },
     [](const M5Config& c) { return format_number(c.base_frequency_hz); },
     [](const M5Config& c) -> std::optional<std::string> {
       if (!(c.base_frequency_hz > 0) || !(c.base_frequency_hz <= kMaxFrequencyHz)) {
         return "must be above 0 and at most " + format_number(kMaxFrequencyHz);
       }
       return std::nullopt;
     }},
    {"fscale_power", [](M5Config& c, std::string_view t) { return set_double(c.fscale_power, t); },
     [](const M5Config& c) { return format_number(c.fscale_power); },
     [](const M5Config& c) -> std::optional<std::string> {
       if (!(c.fscale_power >= 1) || !(c.fscale_power <= 8)) return "must be in 1..8";
       return std::nullopt;
     }},
    period_knob<&M5Config::min_period_ns, PeriodEnd::kMin>("min_period_ms"),
    period_knob<&M5Config::max_period_ns, PeriodEnd::kMax>("max_period_ms"),
    {"high_watermark", [](M5Config& c, std::string_view t) { return set_double(c.high_watermark, t); },
     [](const M5Config& c) { return format_number(c.high_watermark); },
     [](const M5Config& c) -> std::optional<std::string> {
       if (!(c.high_watermark > 0) || !(c.high_watermark <= 1)) return "must be above 0 and at most 1";
       if (!(c.high_watermark > c.low_watermark)) {
         return "must be above low_watermark " + format_number(c.low_watermark);
       }
       return std::nullopt;
     }},
    {"low_watermark", [](M5Config& c, std::string_view t) { return set_double(c.low_watermark, t); },
     [](const M5Config& c) { return format_number(c.low_watermark); },
     [](const M5Config& c) -> std::optional<std::string> {
       if (!(c.low_watermark >= 0) || !(c.low_watermark < 1)) return "must be at least 0 and below 1";
       if (!(c.low_watermark < c.high_watermark)) {
         return "must be below high_watermark " + format_number(c.high_watermark);
       }
       return std::nullopt;
     }},
    {"rate_limit_mib_s", [](M5Config& c, std::string_view t) { return set_scaled(c.rate_limit_bytes_per_s, t, kMiB); },
     [](const M5Config& c) { return format_scaled(c.rate_limit_bytes_per_s, kMiB); },
     [](const M5Config& c) -> std::optional<std::string> {
       const std::uint64_t r = c.rate_limit_bytes_per_s;
       if (r != 0 && (r < kMinRateBytes || r > kMaxRateBytes)) {
         return "must be 0 (no migration) or in " + format_scaled(kMinRateBytes, kMiB) + ".." +
                format_scaled(kMaxRateBytes, kMiB);
       }
       return std::nullopt;
     }},
    count_knob<&M5Config::batch_pages, 1, kMaxBatchPages>("batch_pages"),
}};

constexpr std::string_view kSection = "tiering.";

const Knob* find_knob(std::string_view key) {
  if (key.starts_with(kSection)) key.remove_prefix(kSection.size());
  for (const Knob& k : kKnobs) {
    if (k.name == key) return &k;
  }
  return nullptr;
}

std::string prefix(std::string_view name) { return std::string(kSection) + std::string(name) + ": "; }

}  // namespace

Result<void> M5Config::set(std::string_view key, std::string_view value) {
  const Knob* knob = find_knob(key);
  if (knob == nullptr) return fail(EINVAL, prefix(key) + "unknown knob");
  M5Config next = *this;
  if (const ParseError e = knob->parse(next, value)) {
    return fail(EINVAL, prefix(knob->name) + "'" + std::string(value) + "' " + *e);
  }
  if (const auto broken = knob->rule(next)) {
    return fail(EINVAL, prefix(knob->name) + std::string(value) + " " + *broken);
  }
  if (auto ok = next.validate(); !ok) return ok;
  *this = next;
  return {};
}

Result<std::string> M5Config::get(std::string_view key) const {
  const Knob* knob = find_knob(key);
  if (knob == nullptr) return fail(EINVAL, prefix(key) + "unknown knob");
  return knob->get(*this);
}

std::vector<std::string> M5Config::keys() {
  std::vector<std::string> out;
  out.reserve(kKnobs.size());
  for (const Knob& k : kKnobs) out.emplace_back(k.name);
  return out;
}

Result<void> M5Config::validate() const {
  for (const Knob& k : kKnobs) {
    if (const auto broken = k.rule(*this)) return fail(EINVAL, prefix(k.name) + k.get(*this) + " " + *broken);
  }
  return {};
}

}  // namespace cxlpool::tiering
