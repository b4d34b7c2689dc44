// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/common/crc32c.hpp"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

namespace cxlpool {

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t seed) {
  // ISA-L's crc32_iscsi neither inverts its input state nor its result, and
  // takes an int length: invert around it and feed it slices below INT_MAX.
  constexpr std::size_t kMaxSlice = std::size_t{1} << 30;
  std::uint32_t state = ~seed;
  auto* p = const_cast<unsigned char*>(reinterpret_cast<const unsigned char*>(data.data()));
  std::size_t left = data.size();
  while (left > 0) {
    const std::size_t n = std::min(left, kMaxSlice);
    state = crc32_iscsi(p, static_cast<int>(n), state);
    p += n;
    left -= n;
  }
  return ~state;
}

}  // namespace cxlpool
