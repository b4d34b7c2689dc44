// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/proc_text.hpp"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "text_fields.hpp"

namespace cxlpool::ckpt {
namespace {

using detail::lines;
using detail::number;
using detail::words;

// "start-end perms offset dev inode   path": the path is the rest of the
// line after the inode, spaces and all.
bool vma_header(std::string_view line, SmapsEntry& e) {
  std::size_t pos = 0;
  auto next_word = [&]() -> std::string_view {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    const std::size_t start = pos;
    while (pos < line.size() && line[pos] != ' ') ++pos;
    return line.substr(start, pos - start);
  };
  const auto range = next_word();
  const auto dash = range.find('-');
  if (dash == std::string_view::npos || !number(range.substr(0, dash), e.start, 16) ||
      !number(range.substr(dash + 1), e.end, 16)) {
    return false;
  }
  e.perms = std::string(next_word());
  if (e.perms.size() != 4 || !number(next_word(), e.offset, 16)) return false;
  if (next_word().find(':') == std::string_view::npos || !number(next_word(), e.inode)) return false;
  while (pos < line.size() && line[pos] == ' ') ++pos;
  e.path = std::string(line.substr(pos));
  return true;
}

// Calls fn(key, words of the value) for every "Key: value" line.
template <class Fn>
void for_each_key(std::string_view text, Fn&& fn) {
  for (std::string_view line : lines(text)) {
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    fn(line.substr(0, colon), words(line.substr(colon + 1)));
  }
}

}  // namespace

bool SmapsEntry::has_flag(std::string_view flag) const {
  return std::find(vm_flags.begin(), vm_flags.end(), flag) != vm_flags.end();
}

Result<std::vector<SmapsEntry>> parse_smaps(std::string_view text) {
  std::vector<SmapsEntry> out;
  for (std::string_view line : lines(text)) {
    if (line.empty()) continue;
    SmapsEntry e;
    if (vma_header(line, e)) {
      out.push_back(std::move(e));
      continue;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || out.empty()) {
      return fail(EIO, "smaps: unexpected line \"" + std::string(line.substr(0, 80)) + "\"");
    }
    if (line.substr(0, colon) == "VmFlags") {
      for (auto w : words(line.substr(colon + 1))) out.back().vm_flags.emplace_back(w);
    }
  }
  return out;
}

Result<StatusFields> parse_status(std::string_view text) {
  StatusFields s;
  int seen = 0;
  for_each_key(text, [&](std::string_view key, const std::vector<std::string_view>& w) {
    uint64_t v = 0;
    auto ids = [&](uint32_t (&out)[4]) {
      for (std::size_t i = 0; i < 4 && i < w.size(); ++i) {
        if (number(w[i], v)) out[i] = static_cast<uint32_t>(v);
      }
      ++seen;
    };
    auto cap = [&](uint64_t& out) {
      if (!w.empty() && number(w[0], out, 16)) ++seen;
    };
    if (key == "State" && !w.empty()) s.state = w[0][0];
    else if (key == "Umask" && !w.empty() && number(w[0], v, 8)) s.umask = static_cast<uint32_t>(v), s.has_umask = true;
    else if (key == "Uid") ids(s.uid);
    else if (key == "Gid") ids(s.gid);
    else if (key == "Groups") {
      for (auto g : w) {
        if (number(g, v)) s.groups.push_back(static_cast<uint32_t>(v));
      }
    } else if (key == "CapInh") cap(s.cap_inheritable);
    else if (key == "CapPrm") cap(s.cap_permitted);
    else if (key == "CapEff") cap(s.cap_effective);
    else if (key == "CapBnd") cap(s.cap_bounding);
    else if (key == "CapAmb") cap(s.cap_ambient);
    else if (key == "NoNewPrivs" && !w.empty() && number(w[0], v)) s.no_new_privs = static_cast<uint32_t>(v);
    else if (key == "Seccomp" && !w.empty() && number(w[0], v)) s.seccomp = static_cast<uint32_t>(v);
  });
  if (seen != 7) return fail(EIO, "status: Uid, Gid or capability lines missing");
  return s;
}

Result<MmFields> parse_stat_mm(std::string_view text) {
  // The comm field may hold spaces and parentheses: fields start after the
  // last ')'. The word after it is field 3.
  const auto close = text.rfind(')');
  if (close == std::string_view::npos) return fail(EIO, "stat: no comm field");
  const auto w = words(text.substr(close + 1));
  auto field = [&](int n, uint64_t& out) { return n - 3 < static_cast<int>(w.size()) && number(w[n - 3], out); };
  MmFields m;
  const bool ok = field(26, m.start_code) && field(27, m.end_code) && field(28, m.start_stack) &&
                  field(45, m.start_data) && field(46, m.end_data) && field(47, m.start_brk) &&
                  field(48, m.arg_start) && field(49, m.arg_end) && field(50, m.env_start) && field(51, m.env_end);
  if (!ok) return fail(EIO, "stat: mm fields missing (a kernel thread, or the line is cut short)");
  return m;
}

Result<FdInfo> parse_fdinfo(std::string_view text) {
  FdInfo info;
  int seen = 0;
  bool bad = false;
  for_each_key(text, [&](std::string_view key, const std::vector<std::string_view>& w) {
    uint64_t v = 0;
    if (w.empty()) return;
    if (key == "pos" && number(w[0], v)) info.pos = v, ++seen;
    else if (key == "flags" && number(w[0], v, 8)) info.flags = static_cast<uint32_t>(v), ++seen;
    else if (key == "eventfd-count") info.has_eventfd_count = number(w[0], info.eventfd_count, 16), bad |= !info.has_eventfd_count;
    else if (key == "eventfd-id") info.has_eventfd_id = number(w[0], info.eventfd_id), bad |= !info.has_eventfd_id;
    else if (key == "eventfd-semaphore") {
      info.has_eventfd_semaphore = number(w[0], v) && v <= 1;
      bad |= !info.has_eventfd_semaphore;
      info.eventfd_semaphore = v == 1;
    }
  });
  if (seen != 2) return fail(EIO, "fdinfo: pos or flags missing");
  if (bad) return fail(EIO, "fdinfo: an eventfd line that is not a number");
  return info;
}

Result<std::vector<std::array<uint64_t, 2>>> parse_limits(std::string_view text, size_t count) {
  // The kernel prints "%-25s %-20s %-20s %-10s": a name with spaces in it,
  // then the soft and hard limits at fixed columns.
  constexpr size_t kSoftColumn = 26, kHardColumn = 47, kWidth = 20;
  std::vector<std::array<uint64_t, 2>> out;
  size_t at = text.find('\n');  // the header
  while (out.size() < count && at != std::string_view::npos && at + 1 < text.size()) {
    const size_t end = text.find('\n', at + 1);
    const std::string_view row = text.substr(at + 1, end == std::string_view::npos ? end : end - at - 1);
    at = end;
    if (row.size() < kHardColumn + 1) return fail(EIO, "limits: a row is cut short");
    std::array<uint64_t, 2> limit{};
    for (int i = 0; i < 2; ++i) {
      std::string_view field = row.substr(i == 0 ? kSoftColumn : kHardColumn, kWidth);
      while (!field.empty() && field.back() == ' ') field.remove_suffix(1);
      if (field == "unlimited") {
        limit[i] = ~0ull;
      } else if (!number(field, limit[i])) {
        return fail(EIO, "limits: '" + std::string(field) + "' is not a limit");
      }
    }
    out.push_back(limit);
  }
  if (out.size() != count) return fail(EIO, "limits: fewer rows than resources");
  return out;
}

}  // namespace cxlpool::ckpt
