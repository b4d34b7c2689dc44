// SPDX-License-Identifier: Apache-2.0
#include "profile_params.hpp"

#include "../job/value_parsers.hpp"

namespace cxlpool::io {

ProfileParams::ProfileParams(const ProfileInfo& info, std::map<std::string, std::string, std::less<>> values)
    : info_(info), values_(std::move(values)) {}

std::string ProfileParams::raw(std::string_view name) {
  auto it = values_.find(name);
  if (it != values_.end()) return it->second;
  for (const auto& p : info_.params) {
    if (p.name == name) return p.default_value;
  }
  return {};
}

void ProfileParams::bad(std::string_view name, std::string_view why) {
  if (error_) return;
  error_ = Error{EINVAL, "profile " + info_.name + ": parameter '" + std::string(name) + "' ('" + raw(name) +
                             "'): " + std::string(why)};
}

void ProfileParams::check(bool ok, std::string_view name, std::string_view why) {
  if (!ok) bad(name, why);
}

std::string ProfileParams::text(std::string_view name) { return raw(name); }

std::uint64_t ProfileParams::size(std::string_view name) {
  auto bytes = parse_size(raw(name), 1024);
  if (!bytes) {
    bad(name, bytes.error().message);
    return 1;
  }
  if (*bytes == 0) {
    bad(name, "must be greater than 0");
    return 1;
  }
  return *bytes;
}

std::uint64_t ProfileParams::count(std::string_view name, std::uint64_t lo, std::uint64_t hi) {
  auto n = parse_uint(raw(name));
  if (!n) {
    bad(name, n.error().message);
    return lo;
  }
  if (*n < lo || *n > hi) {
    bad(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return lo;
  }
  return *n;
}

std::uint64_t ProfileParams::time_us(std::string_view name) {
  auto ns = parse_time_ns(raw(name), 1000);
  if (!ns) {
    bad(name, ns.error().message);
    return 1;
  }
  if (*ns < 1000) {
    bad(name, "must be at least 1us");
    return 1;
  }
  return *ns / 1000;
}

double ProfileParams::real(std::string_view name, double lo, double hi) {
  auto v = parse_double(raw(name));
  if (!v) {
    bad(name, v.error().message);
    return (lo + hi) / 2;
  }
  if (!(*v > lo && *v < hi)) {
    bad(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return (lo + hi) / 2;
  }
  return *v;
}

std::vector<std::uint64_t> ProfileParams::size_list(std::string_view name) {
  std::vector<std::uint64_t> out;
  const std::string value = raw(name);  // split() returns views into it
  for (auto part : split(value, ':')) {
    auto bytes = parse_size(part, 1024);
    if (!bytes || *bytes == 0) {
      bad(name, bytes ? "sizes must be greater than 0" : bytes.error().message);
      return {1};
    }
    out.push_back(*bytes);
  }
  return out;
}

std::vector<std::string> ProfileParams::word_list(std::string_view name) {
  std::vector<std::string> out;
  const std::string value = raw(name);
  for (auto part : split(value, ':')) {
    part = trim(part);
    if (part.empty()) {
      bad(name, "empty entry");
      return {};
    }
    out.emplace_back(part);
  }
  return out;
}

bool ProfileParams::flag(std::string_view name) {
  auto v = parse_bool(std::string_view(raw(name)));
  if (!v) {
    bad(name, v.error().message);
    return false;
  }
  return *v;
}

std::string size_text(std::uint64_t bytes) {
  static constexpr std::string_view kUnits[] = {"k", "m", "g", "t"};
  std::string unit;
  for (auto u : kUnits) {
    if (bytes == 0 || bytes % 1024 != 0) break;
    bytes /= 1024;
    unit = u;
  }
  return std::to_string(bytes) + unit;
}

void JobText::comment(std::string_view line) {
  auto& lines = sections_.empty() ? header_ : sections_.back().lines;
  lines.push_back("; " + std::string(line));
}

void JobText::section(std::string_view name) { sections_.push_back(Section{std::string(name), {}}); }

void JobText::set(std::string_view key, std::string_view value) {
  sections_.back().lines.push_back(std::string(key) + "=" + std::string(value));
}

void JobText::set(std::string_view key, std::uint64_t value) { set(key, std::to_string(value)); }

void JobText::set_bytes(std::string_view key, std::uint64_t bytes) { set(key, size_text(bytes)); }

void JobText::set_us(std::string_view key, std::uint64_t us) {
  if (us % 1000000 == 0) set(key, std::to_string(us / 1000000) + "s");
  else if (us % 1000 == 0) set(key, std::to_string(us / 1000) + "ms");
  else set(key, std::to_string(us) + "us");
}

void JobText::flag(std::string_view key) { sections_.back().lines.emplace_back(key); }

std::string JobText::render(const std::vector<std::string>& job_overrides) const {
  std::string out;
  for (const auto& line : header_) out += line + "\n";
  for (const auto& s : sections_) {
    out += "\n[" + s.name + "]\n";
    for (const auto& line : s.lines) out += line + "\n";
    if (s.name == "global" || job_overrides.empty()) continue;
    out += "; from the command line\n";
    for (const auto& o : job_overrides) out += o + "\n";
  }
  return out;
}

}  // namespace cxlpool::io
