// SPDX-License-Identifier: Apache-2.0
// Splitting /proc text into lines and words, and reading numbers out of it,
// for the parsers of proc_text.cpp and socket_text.cpp.
#pragma once

#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cxlpool::ckpt::detail {

inline std::vector<std::string_view> lines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// The whole of s as a number in `base`.
inline bool number(std::string_view s, uint64_t& out, int base = 10) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

// The whitespace-separated words of a line.
inline std::vector<std::string_view> words(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) out.push_back(line.substr(start, i - start));
  }
  return out;
}

}  // namespace cxlpool::ckpt::detail
