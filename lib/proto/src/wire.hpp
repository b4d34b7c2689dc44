// SPDX-License-Identifier: Apache-2.0
// Little-endian byte writer and bounds-checked reader for the wire format.
// Private to lib/proto. Byte-by-byte shifts keep the code independent of the
// host's endianness and free of unaligned or aliasing loads.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace cxlpool::proto::wire {

class Writer {
 public:
  explicit Writer(std::vector<std::byte>& out) : out_(out) {}

  void u8(uint8_t v) { out_.push_back(static_cast<std::byte>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  template <std::unsigned_integral T>
  void value(T v) {
    put(v, sizeof(T));
  }
  void bytes(std::span<const std::byte> data) { out_.insert(out_.end(), data.begin(), data.end()); }

 private:
  void put(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) out_.push_back(static_cast<std::byte>(v >> (8 * i)));
  }

  std::vector<std::byte>& out_;
};

// Every read checks the bytes left first; a failed read consumes nothing and
// leaves its output untouched.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }

  bool u8(uint8_t& v) { return get(v); }
  bool u16(uint16_t& v) { return get(v); }
  bool u32(uint32_t& v) { return get(v); }
  bool u64(uint64_t& v) { return get(v); }
  template <std::unsigned_integral T>
  bool value(T& v) {
    return get(v);
  }

  bool bytes(size_t count, std::span<const std::byte>& out) {
    if (remaining() < count) return false;
    out = data_.subspan(pos_, count);
    pos_ += count;
    return true;
  }

 private:
  template <typename T>
  bool get(T& v) {
    if (remaining() < sizeof(T)) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < sizeof(T); ++i) {
      x |= static_cast<uint64_t>(std::to_integer<uint8_t>(data_[pos_ + i])) << (8 * i);
    }
    v = static_cast<T>(x);
    pos_ += sizeof(T);
    return true;
  }

  std::span<const std::byte> data_;
  size_t pos_ = 0;
};

}  // namespace cxlpool::proto::wire
