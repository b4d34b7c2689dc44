// SPDX-License-Identifier: Apache-2.0
#include "pod_name.hpp"

#include <algorithm>
#include <cctype>

namespace cxlpool::daemon {

bool valid_pod_name(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace cxlpool::daemon
