// SPDX-License-Identifier: Apache-2.0
// Payloads for the SSD format's tests: bytes that change along the payload
// and with `seed`, so that payloads (and their CRCs) tell apart.
#pragma once

#include <cstddef>
#include <vector>

namespace cxlpool::kvcache {

inline std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((i * 7 + seed * 13) & 0xff);
  return v;
}

}  // namespace cxlpool::kvcache
