// SPDX-License-Identifier: Apache-2.0
// CRC-32C (Castagnoli) for verify=crc32c: the SSE4.2 instruction when the
// CPU has it, a table otherwise. Same values as fio's crc32c.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cxlpool::io {

// `crc` chains calls: crc32c(b, crc32c(a)) == crc32c(a followed by b).
std::uint32_t crc32c(const void* data, std::size_t bytes, std::uint32_t crc = 0);

}  // namespace cxlpool::io
