// SPDX-License-Identifier: Apache-2.0
#include "sysfs_fixture.hpp"

namespace cxlpool::test {

std::filesystem::path sysfs_fixture(std::string_view name) {
  return std::filesystem::path(CXLPOOL_SYSFS_FIXTURES) / name;
}

}  // namespace cxlpool::test
