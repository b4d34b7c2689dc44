// SPDX-License-Identifier: Apache-2.0
#include "priority_parsers.hpp"

#include <map>
#include <string>

#include "value_parsers.hpp"

namespace cxlpool::io {
namespace {

std::vector<std::string_view> split_on(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at = 0;;) {
    const std::size_t next = text.find(sep, at);
    out.push_back(text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

Result<int> bounded_int(std::string_view text, int max, const char* what) {
  auto n = parse_uint(text);
  if (!n) return tl::unexpected(n.error());
  if (*n > static_cast<std::uint64_t>(max))
    return fail(EINVAL, std::string(what) + " " + std::to_string(*n) + " is outside [0, " + std::to_string(max) + "]");
  return static_cast<int>(*n);
}

}  // namespace

Result<std::vector<PrioritySplit>> parse_cmdprio_bssplit(std::string_view text, std::uint32_t kb_base) {
  std::vector<PrioritySplit> out;
  std::map<std::uint32_t, std::uint32_t> per_size;
  for (std::string_view entry : split_on(text, ':')) {
    const auto parts = split_on(entry, '/');
    if (parts.size() != 2 && parts.size() != 4)
      return fail(EINVAL, "'" + std::string(entry) + "': needs blocksize/percent or blocksize/percent/class/level");
    PrioritySplit p;
    auto bytes = parse_size(parts[0], kb_base);
    if (!bytes) return tl::unexpected(bytes.error());
    if (*bytes == 0 || *bytes > UINT32_MAX) return fail(EINVAL, "'" + std::string(parts[0]) + "': not a block size");
    p.bytes = static_cast<std::uint32_t>(*bytes);
    auto percent = bounded_int(parts[1], 100, "percentage");
    if (!percent) return tl::unexpected(percent.error());
    p.percent = static_cast<std::uint32_t>(*percent);
    if (parts.size() == 4) {
      auto cls = bounded_int(parts[2], kMaxPrioClass, "class");
      if (!cls) return tl::unexpected(cls.error());
      auto level = bounded_int(parts[3], kMaxPrioLevel, "level");
      if (!level) return tl::unexpected(level.error());
      p.prio_class = *cls;
      p.level = *level;
    }
    if ((per_size[p.bytes] += p.percent) > 100)
      return fail(EINVAL, "the percentages of " + std::string(parts[0]) + " add up to more than 100");
    out.push_back(p);
  }
  return out;
}

}  // namespace cxlpool::io
