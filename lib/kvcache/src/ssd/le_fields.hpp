// SPDX-License-Identifier: Apache-2.0
#pragma once
// Little-endian field access for the SSD format, independent of the host's
// byte order and of alignment.
#include <cstddef>
#include <cstdint>

namespace cxlpool::kvcache::ssd_detail {

template <typename T>
inline void store_le(std::byte* p, T v) {
  for (std::size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

template <typename T>
[[nodiscard]] inline T load_le(const std::byte* p) {
  T v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(std::to_integer<std::uint8_t>(p[i])) << (8 * i);
  return v;
}

[[nodiscard]] inline bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

}  // namespace cxlpool::kvcache::ssd_detail
