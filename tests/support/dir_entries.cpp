// SPDX-License-Identifier: Apache-2.0
#include "dir_entries.hpp"

#include <filesystem>
#include <system_error>

namespace cxlpool::test {

size_t count_dir_entries(const std::string& dir, const std::string& prefix) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) ++n;
  }
  return n;
}

}  // namespace cxlpool::test
