// SPDX-License-Identifier: Apache-2.0
// The committed fake sysfs trees (tests/fixtures/sysfs/<name>): NUMA
// topologies, memory tiers and DAMON's admin tree, for code that reads the
// kernel's files to be tested without the hardware or privileges. Tests that
// change a tree work on a copy (TempDir::copy_of).
#pragma once

#include <filesystem>
#include <string_view>

namespace cxlpool::test {

std::filesystem::path sysfs_fixture(std::string_view name);

}  // namespace cxlpool::test
