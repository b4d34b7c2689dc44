// SPDX-License-Identifier: Apache-2.0
// Counting a sysfs folder's entries, for tests that check a discovery
// against what the kernel lists.
#pragma once

#include <cstddef>
#include <string>

namespace cxlpool::test {

// How many entries of `dir` have a name starting with `prefix`; 0 when
// `dir` is missing (a host without that bus).
size_t count_dir_entries(const std::string& dir, const std::string& prefix);

}  // namespace cxlpool::test
