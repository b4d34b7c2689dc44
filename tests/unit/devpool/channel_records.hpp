// SPDX-License-Identifier: Apache-2.0
// Records the channel tests send: message number i, spread over every byte
// of the record so that a record assembled from two different messages (a
// torn read) or from stale bytes does not decode.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <span>

namespace cxlpool::devpool::test {

inline std::byte record_byte(uint64_t number, size_t index) {
  return static_cast<std::byte>((number >> (8 * (index % 8))) ^ (index * 0x9d) ^ 0x5a);
}

inline void make_record(uint64_t number, std::span<std::byte> out) {
  for (size_t i = 0; i < out.size(); ++i) out[i] = record_byte(number, i);
}

// The message number, or nothing when the bytes are not one record.
inline std::optional<uint64_t> record_number(std::span<const std::byte> in) {
  if (in.size() < 8) return std::nullopt;
  uint64_t number = 0;
  for (size_t i = 0; i < 8; ++i) number |= uint64_t(std::to_integer<uint8_t>(in[i] ^ record_byte(0, i))) << (8 * i);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != record_byte(number, i)) return std::nullopt;
  }
  return number;
}

// Page-aligned zeroed memory for a channel or link.
struct AlignedMemory {
  explicit AlignedMemory(size_t bytes)
      : size((bytes + 4095) / 4096 * 4096), data(static_cast<std::byte*>(std::aligned_alloc(4096, size)), &std::free) {
    std::memset(data.get(), 0, size);
  }
  std::span<std::byte> span() const { return {data.get(), size}; }
  size_t size;
  std::unique_ptr<std::byte, decltype(&std::free)> data;
};

}  // namespace cxlpool::devpool::test
