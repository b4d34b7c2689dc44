// SPDX-License-Identifier: Apache-2.0
// Builds datagrams byte by byte, independently of the codec, so tests can
// state the documented layout and produce what the encoder refuses to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "cxlpool/proto/messages.hpp"

namespace cxlpool::proto::testing {

class Bytes {
 public:
  Bytes& u8(uint8_t v) { return put(v, 1); }
  Bytes& u16(uint16_t v) { return put(v, 2); }
  Bytes& u32(uint32_t v) { return put(v, 4); }
  Bytes& i32(int32_t v) { return put(static_cast<uint32_t>(v), 4); }
  Bytes& u64(uint64_t v) { return put(v, 8); }
  // u16 length + bytes, the wire form of a string.
  Bytes& str(std::string_view s) {
    u16(static_cast<uint16_t>(s.size()));
    return raw(s);
  }
  Bytes& raw(std::string_view s) {
    for (const char c : s) data_.push_back(static_cast<std::byte>(c));
    return *this;
  }
  Bytes& append(const std::vector<std::byte>& other) {
    data_.insert(data_.end(), other.begin(), other.end());
    return *this;
  }
  const std::vector<std::byte>& data() const { return data_; }
  size_t size() const { return data_.size(); }

 private:
  Bytes& put(uint64_t v, int width) {
    for (int i = 0; i < width; ++i) data_.push_back(static_cast<std::byte>((v >> (8 * i)) & 0xff));
    return *this;
  }

  std::vector<std::byte> data_;
};

// Header + payload with payload_length set to the payload's size.
inline std::vector<std::byte> datagram(MsgType type, const Bytes& payload, uint16_t version = 1,
                                       uint32_t request_id = 7) {
  Bytes out;
  out.u32(kMagic).u16(version).u16(static_cast<uint16_t>(type)).u32(request_id);
  out.u32(static_cast<uint32_t>(payload.size())).append(payload.data());
  return out.data();
}

inline void patch_u16(std::vector<std::byte>& d, size_t offset, uint16_t v) {
  for (int i = 0; i < 2; ++i) d.at(offset + i) = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}
inline void patch_u32(std::vector<std::byte>& d, size_t offset, uint32_t v) {
  for (int i = 0; i < 4; ++i) d.at(offset + i) = static_cast<std::byte>((v >> (8 * i)) & 0xff);
}

}  // namespace cxlpool::proto::testing
