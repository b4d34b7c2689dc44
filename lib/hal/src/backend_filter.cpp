// SPDX-License-Identifier: Apache-2.0
#include "backend_filter.hpp"

#include <algorithm>
#include <cstdlib>

#include "cxlpool/hal/backend_registry.hpp"

namespace cxlpool::hal {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const BackendTableEntry* find_known(std::span<const BackendTableEntry> known, std::string_view name) {
  for (const auto& e : known) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

}  // namespace

bool BackendFilter::allows(BackendClass cls, std::string_view name) const {
  const bool listed = std::find(names.begin(), names.end(), name) != names.end();
  if (exclude) return !listed;
  if (std::find(restricted.begin(), restricted.end(), cls) == restricted.end()) return true;
  return listed;
}

Result<BackendFilter> parse_backend_filter(std::string_view text, std::span<const BackendTableEntry> known) {
  BackendFilter filter;
  filter.text = std::string(text);
  std::string_view rest = trim(text);
  if (rest.empty()) return filter;
  if (rest.front() == '^') {
    filter.exclude = true;
    rest.remove_prefix(1);
  }
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    if (entry.empty()) {
      return fail(EINVAL, std::string(kBackendFilterVariable) + "='" + filter.text + "': empty entry");
    }
    const BackendTableEntry* e = find_known(known, entry);
    if (e == nullptr) {
      std::string all;
      for (const auto& k : known) all += std::string(all.empty() ? "" : ", ") + k.name;
      return fail(EINVAL, std::string(kBackendFilterVariable) + "='" + filter.text + "': no backend named '" +
                              std::string(entry) + "' (known: " + all + ")");
    }
    filter.names.emplace_back(entry);
    if (std::find(filter.restricted.begin(), filter.restricted.end(), e->cls) == filter.restricted.end()) {
      filter.restricted.push_back(e->cls);
    }
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return filter;
}

Result<BackendFilter> backend_filter_from_environment(std::span<const BackendTableEntry> known) {
  const char* text = std::getenv(kBackendFilterVariable);
  return parse_backend_filter(text == nullptr ? "" : text, known);
}

}  // namespace cxlpool::hal
