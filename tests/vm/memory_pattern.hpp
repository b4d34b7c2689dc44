// SPDX-License-Identifier: Apache-2.0
// A position-dependent fill pattern, so a page that moves to the wrong place
// or loses its contents during a migration is detected.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cxlpool/common/result.hpp"

namespace cxlpool::vmtest {

// Writes a word derived from (seed, offset) into every 8-byte word.
void fill_pattern(void* addr, size_t length, uint64_t seed);

// Checks the pattern; the error names the first wrong byte offset.
Result<void> verify_pattern(const void* addr, size_t length, uint64_t seed);

}  // namespace cxlpool::vmtest
