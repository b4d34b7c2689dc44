// SPDX-License-Identifier: Apache-2.0
#include "lackey_import.hpp"

#include <charconv>
#include <string>

namespace cxlpool::tracegen {

Result<bool> parse_lackey_line(std::string_view line, LackeyAccess& out) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (line.empty() || line.starts_with("==") || line.starts_with("--")) return false;
  char kind = 0;
  std::string_view rest;
  if (line.size() > 3 && line[0] == 'I' && line[1] == ' ' && line[2] == ' ') {
    kind = 'I';
    rest = line.substr(3);
  } else if (line.size() > 3 && line[0] == ' ' && line[2] == ' ' &&
             (line[1] == 'L' || line[1] == 'S' || line[1] == 'M')) {
    kind = line[1];
    rest = line.substr(3);
  } else {
    return fail(EINVAL, "not a lackey trace line");
  }
  const auto comma = rest.find(',');
  if (comma == std::string_view::npos || comma == 0 || comma + 1 >= rest.size())
    return fail(EINVAL, "expected ADDRESS,SIZE");
  std::uint64_t address = 0;
  std::uint32_t size = 0;
  auto a = std::from_chars(rest.data(), rest.data() + comma, address, 16);
  if (a.ec != std::errc{} || a.ptr != rest.data() + comma) return fail(EINVAL, "bad hex address");
  auto s = std::from_chars(rest.data() + comma + 1, rest.data() + rest.size(), size, 10);
  if (s.ec != std::errc{} || s.ptr != rest.data() + rest.size() || size == 0) return fail(EINVAL, "bad size");
  if (address + size < address) return fail(EINVAL, "access past the end of the address space");
  out.address = address;
  out.size = size;
  out.is_fetch = kind == 'I';
  out.is_write = kind == 'S' || kind == 'M';
  return true;
}

Result<LackeyStats> read_lackey(std::FILE* in, std::uint64_t max_instructions,
                                const std::function<Result<void>(const LackeyAccess&)>& sink) {
  LackeyStats stats;
  std::string line;
  char buf[512];
  LackeyAccess access;
  while (std::fgets(buf, sizeof buf, in)) {
    line += buf;
    if (line.back() != '\n' && !std::feof(in)) continue;  // a line longer than the buffer
    ++stats.lines;
    auto parsed = parse_lackey_line(line, access);
    if (!parsed) return fail(parsed.error().code, "line " + std::to_string(stats.lines) + ": " + parsed.error().message);
    const bool fetch = *parsed && line[0] == 'I';
    const char kind = line.size() > 1 ? line[1] : ' ';
    line.clear();
    if (!*parsed) continue;
    if (fetch) {
      if (max_instructions && stats.instructions >= max_instructions) {
        stats.stopped_early = true;
        break;
      }
      ++stats.instructions;
    } else {
      stats.loads += kind == 'L';
      stats.stores += kind == 'S';
      stats.modifies += kind == 'M';
    }
    access.instruction = stats.instructions;
    if (auto ok = sink(access); !ok) return fail(ok.error().code, ok.error().message);
  }
  if (std::ferror(in)) return fail(EIO, "reading the lackey trace failed");
  return stats;
}

}  // namespace cxlpool::tracegen
