// SPDX-License-Identifier: Apache-2.0
// Names of enum values, for logs, JSON, counters and the parsers of config
// files and command lines. Each enum has one constexpr table of
// {value, name} that serves both directions, so that the name a program
// prints is always one it accepts back and a value added to the enum needs
// one row, not a switch case here and a parse entry there.
//
// A value may have more than one row (an alias, such as fio's "readwrite"
// beside "rw"): every row parses, the first row of a value is its name.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace cxlpool {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;  // a string literal: callers hand it on as a C string
};

// Whether a parse ignores ASCII case ("Warning" for "warning").
enum class NameCase { kExact, kIgnore };

// The first name `table` gives `value`; `fallback` for a value it lacks (an
// out-of-range cast from the wire or from a file).
template <typename Enum, std::size_t N>
[[nodiscard]] constexpr const char* enum_name(const EnumName<Enum> (&table)[N], Enum value,
                                              const char* fallback) {
  for (const auto& row : table) {
    if (row.value == value) return row.name;
  }
  return fallback;
}

namespace detail {

constexpr char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr bool names_match(std::string_view text, std::string_view name, NameCase match) {
  if (match == NameCase::kExact) return text == name;
  if (text.size() != name.size()) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (ascii_lower(text[i]) != ascii_lower(name[i])) return false;
  }
  return true;
}

}  // namespace detail

// The value whose row names `text`; nullopt where no row does.
template <typename Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<Enum> enum_from_name(const EnumName<Enum> (&table)[N], std::string_view text,
                                                           NameCase match = NameCase::kExact) {
  for (const auto& row : table) {
    if (detail::names_match(text, row.name, match)) return row.value;
  }
  return std::nullopt;
}

}  // namespace cxlpool
