// SPDX-License-Identifier: Apache-2.0
#include "quantity.hpp"

#include <charconv>
#include <limits>
#include <string>

namespace cxlpool::tracegen {
namespace {

struct Unit {
  std::string_view suffix;
  std::uint64_t factor;
};

Result<std::uint64_t> parse_scaled(std::string_view text, std::initializer_list<Unit> units, const char* what) {
  const std::string original(text);
  std::uint64_t number = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec == std::errc::result_out_of_range) return fail(ERANGE, std::string(what) + " too large: '" + original + "'");
  if (ec != std::errc() || ptr == text.data()) return fail(EINVAL, std::string("not a ") + what + ": '" + original + "'");
  const std::string_view suffix(ptr, static_cast<std::size_t>(text.data() + text.size() - ptr));
  for (const Unit& u : units) {
    if (suffix != u.suffix) continue;
    if (number > std::numeric_limits<std::uint64_t>::max() / u.factor) {
      return fail(ERANGE, std::string(what) + " too large: '" + original + "'");
    }
    return number * u.factor;
  }
  std::string allowed;
  for (const Unit& u : units) {
    if (!u.suffix.empty()) allowed += (allowed.empty() ? "" : ", ") + std::string(u.suffix);
  }
  return fail(EINVAL, "unknown unit in " + std::string(what) + " '" + original + "' (use " + allowed + ")");
}

}  // namespace

Result<std::uint64_t> parse_count(std::string_view text) {
  return parse_scaled(text, {{"", 1}, {"K", 1000}, {"k", 1000}, {"M", 1000000}, {"G", 1000000000}}, "count");
}

Result<std::uint64_t> parse_duration_ns(std::string_view text) {
  return parse_scaled(text, {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}, "duration");
}

}  // namespace cxlpool::tracegen
