// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/hal/meminfo.hpp"

#include <charconv>
#include <limits>

namespace cxlpool::hal {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Drops "Node <N> " so node files and /proc/meminfo parse alike.
std::string_view strip_node_prefix(std::string_view line) {
  if (line.substr(0, 5) != "Node ") return line;
  size_t pos = 5;
  while (pos < line.size() && line[pos] >= '0' && line[pos] <= '9') ++pos;
  if (pos == 5 || pos >= line.size() || line[pos] != ' ') return line;
  return line.substr(pos + 1);
}

}  // namespace

Result<MemInfo> parse_meminfo(std::string_view text, const std::string& file) {
  MemInfo info;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    ++line_no;
    line = trim(line);
    if (line.empty()) continue;

    const auto bad = [&](const char* why) {
      return fail(EINVAL, file + ":" + std::to_string(line_no) + ": " + why + ": '" +
                              std::string(line) + "'");
    };
    const std::string_view body = strip_node_prefix(line);
    const size_t colon = body.find(':');
    if (colon == std::string_view::npos || colon == 0) return bad("expected 'Name: value'");
    const std::string_view name = trim(body.substr(0, colon));
    std::string_view rest = trim(body.substr(colon + 1));

    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc() || ptr == rest.data()) return bad("value is not a number");
    const std::string_view unit = trim(std::string_view(ptr, rest.data() + rest.size() - ptr));
    if (unit == "kB") {
      if (value > std::numeric_limits<uint64_t>::max() / 1024) return bad("value too large");
      value *= 1024;
    } else if (!unit.empty()) {
      return bad("unknown unit");
    }
    info.insert_or_assign(std::string(name), value);
  }
  return info;
}

Result<MemInfo> read_meminfo(const SysfsRoot& root, const std::string& relative) {
  auto text = root.read_string(relative);
  if (!text) return tl::unexpected(text.error());
  return parse_meminfo(*text, root.resolve(relative).string());
}

Result<uint64_t> meminfo_field(const MemInfo& info, std::string_view field,
                               const std::string& file) {
  const auto it = info.find(field);
  if (it == info.end()) return fail(EINVAL, file + ": no " + std::string(field) + " line");
  return it->second;
}

Result<uint64_t> meminfo_available(const MemInfo& info, const std::string& file) {
  if (const auto it = info.find("MemAvailable"); it != info.end()) return it->second;
  auto free = meminfo_field(info, "MemFree", file);
  if (!free) return free;
  auto optional = [&](std::string_view field) -> uint64_t {
    const auto it = info.find(field);
    return it == info.end() ? 0 : it->second;
  };
  return *free + optional("Inactive(file)") + optional("Active(file)") / 2 +
         optional("SReclaimable") / 2;
}

}  // namespace cxlpool::hal
