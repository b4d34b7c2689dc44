// SPDX-License-Identifier: Apache-2.0
#pragma once
// Little-endian field access for the SSD format, independent of the host's
// byte order and of alignment.
#include <concepts>
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

// A header member as stored: an unsigned integer as itself, a 128-bit value
// ({hi, lo}: chunk keys, namespace fingerprints) as its high half, then its
// low half.
template <std::unsigned_integral T>
inline void store_value(std::byte* p, T v) {
  store_le<T>(p, v);
}
template <std::unsigned_integral T>
inline void load_value(const std::byte* p, T& v) {
  v = load_le<T>(p);
}
template <typename T>
  requires requires(T t) { t.hi; t.lo; }
inline void store_value(std::byte* p, const T& v) {
  store_value(p, v.hi);
  store_value(p + sizeof(v.hi), v.lo);
}
template <typename T>
  requires requires(T t) { t.hi; t.lo; }
inline void load_value(const std::byte* p, T& v) {
  load_value(p, v.hi);
  load_value(p + sizeof(v.hi), v.lo);
}

[[nodiscard]] inline bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != std::byte{0}) return false;
  }
  return true;
}

}  // namespace cxlpool::kvcache::ssd_detail
