// SPDX-License-Identifier: Apache-2.0
// Parsers for fio's option value syntaxes: sizes with unit suffixes, times
// with unit suffixes, booleans, per-direction lists ("4k,64k"), bssplit,
// bsrange, percentile lists, random distributions. Errors carry only the
// reason; the caller adds "origin:line: option 'x': ".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "job_spec.hpp"

namespace cxlpool::io {

// fio's kb_base: 1024 (default) reads "k"/"kb" as 1024 and, for
// compatibility with old job files, "kib" as 1000; 1000 swaps the two.
Result<std::uint64_t> parse_size(std::string_view text, std::uint32_t kb_base);

// Unsigned decimal or 0x-hex integer without suffix.
Result<std::uint64_t> parse_uint(std::string_view text);

Result<double> parse_double(std::string_view text);

// Time with an optional suffix (ns, us/usec, ms/msec, s/sec, m/min, h/hour,
// d/day); a bare number is in `default_unit_ns`.
Result<std::uint64_t> parse_time_ns(std::string_view text, std::uint64_t default_unit_ns);

// "1"/"0" (and absent value = true, as for fio's flags).
Result<bool> parse_bool(std::optional<std::string_view> text);

// fio's per-direction lists: "a" sets reads and writes, "a,b" reads then
// writes, an empty field keeps the default. A third (trim) field is refused.
Result<std::vector<std::optional<std::string>>> split_directions(std::string_view text);

// "4k/10:64k/50:1m" — entries without a percentage share what the others
// leave; the result's percentages add up to exactly 100.
Result<std::vector<BlockSizeShare>> parse_bssplit(std::string_view text, std::uint32_t kb_base);

struct SizeRange {
  std::uint32_t min = 0;
  std::uint32_t max = 0;
};
Result<SizeRange> parse_bsrange(std::string_view text, std::uint32_t kb_base);

// "99:99.9" — sorted, each in (0, 100], at most 20 as in fio.
Result<std::vector<double>> parse_percentile_list(std::string_view text);

struct DistributionSpec {
  Distribution kind = Distribution::kRandom;
  double param = 0;
  std::vector<AccessZone> zones;  // kZoned
};
// "random", "zipf[:theta]", "pareto[:h]", "normal[:dev%]" (alias "gauss"),
// "zoned:a/r:..." (one list for reads and writes);
// defaults and ranges are fio's (zipf 1.1, theta != 1; pareto 0.2 in (0,1);
// normal 0 in [0,100)).
Result<DistributionSpec> parse_distribution(std::string_view text);

// rw= with fio's offset modifier: "read", "read:-8k" (bytes added to each
// next sequential offset), "randread:8" (I/Os issued sequentially after each
// random offset).
struct RwSpec {
  RwMode mode = RwMode::kRead;
  std::int64_t seq_skip = 0;
  std::uint32_t random_run = 1;
};
Result<RwSpec> parse_rw_spec(std::string_view text, std::uint32_t kb_base);

// random_distribution=zoned:50/5:30/15:20/ — access percent / range percent
// pairs; an empty range is what the others leave. Access percentages add up
// to 100, ranges to at most 100.
Result<std::vector<AccessZone>> parse_zones(std::string_view text);

std::string_view trim(std::string_view text);
std::vector<std::string_view> split(std::string_view text, char separator);

}  // namespace cxlpool::io
