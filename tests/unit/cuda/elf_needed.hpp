// SPDX-License-Identifier: Apache-2.0
// Reads the DT_NEEDED entries of an ELF64 file (what the dynamic loader will
// load for it), without running it.
#pragma once

#include <string>
#include <vector>

#include "cxlpool/common/result.hpp"

namespace cxlpool::test {

Result<std::vector<std::string>> elf_needed(const std::string& path);

}  // namespace cxlpool::test
