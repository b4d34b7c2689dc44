// SPDX-License-Identifier: Apache-2.0
#include "knob_value.hpp"

#include <charconv>
#include <cmath>
#include <system_error>

namespace cxlpool::tiering::manager {
namespace {

// TOML allows '_' only between two digits.
std::optional<std::string> strip_underscores(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '_') {
      out.push_back(c);
      continue;
    }
    const bool digit_before = i > 0 && text[i - 1] >= '0' && text[i - 1] <= '9';
    const bool digit_after = i + 1 < text.size() && text[i + 1] >= '0' && text[i + 1] <= '9';
    if (!digit_before || !digit_after) return std::nullopt;
  }
  return out;
}

}  // namespace

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  const auto plain = strip_underscores(text);
  if (!plain || plain->empty()) return std::nullopt;
  for (const char c : *plain) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(plain->data(), plain->data() + plain->size(), v);
  if (ec != std::errc() || end != plain->data() + plain->size()) return std::nullopt;
  return v;
}

std::optional<double> parse_number(std::string_view text) {
  auto plain = strip_underscores(text);
  if (!plain || plain->empty()) return std::nullopt;
  std::string_view body = *plain;
  if (body.front() == '+') body.remove_prefix(1);
  if (body.empty()) return std::nullopt;
  // from_chars also takes "inf", "nan" and hex floats; TOML numbers here are
  // decimal, and a knob is never infinite.
  for (const char c : body) {
    const bool ok = (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+';
    if (!ok) return std::nullopt;
  }
  double v = 0;
  const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
  if (ec != std::errc() || end != body.data() + body.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(std::string_view text) {
  if (text == "true") return true;
  if (text == "false") return false;
  return std::nullopt;
}

std::string format_number(double value) {
  char buf[64];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
  if (ec != std::errc()) return "nan";
  return std::string(buf, end);
}

std::string format_scaled(std::uint64_t value, std::uint64_t unit) {
  if (value % unit == 0) return std::to_string(value / unit);
  return format_number(static_cast<double>(value) / static_cast<double>(unit));
}

}  // namespace cxlpool::tiering::manager
