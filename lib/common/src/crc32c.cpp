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

namespace {

// Reflected polynomials over GF(2) modulo the Castagnoli polynomial: bit 31
// is x^0, bit 0 is x^31.
constexpr std::uint32_t kReflectedPoly = 0x82F63B78u;
constexpr std::uint32_t kOne = 0x80000000u;

std::uint32_t multiply_mod_poly(std::uint32_t a, std::uint32_t b) {
  std::uint32_t product = 0;
  for (std::uint32_t bit = kOne; bit != 0; bit >>= 1) {
    if ((a & bit) != 0) product ^= b;
    b = (b & 1u) != 0 ? (b >> 1) ^ kReflectedPoly : b >> 1;  // b *= x
  }
  return product;
}

}  // namespace

std::uint32_t crc32c_combine(std::uint32_t crc_a, std::uint32_t crc_b, std::uint64_t b_bytes) {
  // A CRC with initial value and final xor all ones is linear in the
  // message past its first bytes: crc(a.b) = crc(a) * x^(8 |b|) + crc(b)
  // (mod the polynomial). x^(8 |b|) by squaring, from x^8.
  std::uint32_t shift = kOne;
  std::uint32_t power = kOne >> 8;  // x^8
  for (std::uint64_t n = b_bytes; n != 0; n >>= 1) {
    if ((n & 1u) != 0) shift = multiply_mod_poly(shift, power);
    power = multiply_mod_poly(power, power);
  }
  return multiply_mod_poly(shift, crc_a) ^ crc_b;
}

}  // namespace cxlpool
