// SPDX-License-Identifier: Apache-2.0
// Knob values as written in a TOML file: parsing and printing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cxlpool::tiering::manager {

// Decimal digits, optionally with single '_' between digits (TOML); no sign.
std::optional<std::uint64_t> parse_unsigned(std::string_view text);
// A finite TOML integer or float ("0.95", "1e3", "+2", "1_000.5").
std::optional<double> parse_number(std::string_view text);
// "true" / "false".
std::optional<bool> parse_bool(std::string_view text);

// Shortest text that parses back to the same double; integral values carry
// no fraction ("10", "0.95", "1e+30").
std::string format_number(double value);
// `value / unit` printed exactly enough to round-trip through parse_number.
std::string format_scaled(std::uint64_t value, std::uint64_t unit);

}  // namespace cxlpool::tiering::manager
