// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/devpool/net/descriptor.hpp"

#include <cstring>
#include <string>

namespace cxlpool::devpool::net {
namespace {

template <typename T>
void put_le(std::byte* out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out[i] = static_cast<std::byte>((value >> (8 * i)) & 0xff);
}

template <typename T>
T get_le(const std::byte* in) {
  T value = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) value |= static_cast<T>(static_cast<T>(in[i]) << (8 * i));
  return value;
}

tl::unexpected<Error> bad(const std::string& what) { return fail(EBADMSG, "net descriptor: " + what); }

}  // namespace

void encode_descriptor(const Descriptor& d, std::byte* out16) {
  put_le<std::uint32_t>(out16, d.offset);
  put_le<std::uint16_t>(out16 + 4, d.length);
  put_le<std::uint16_t>(out16 + 6, static_cast<std::uint16_t>(d.kind));
  put_le<std::uint64_t>(out16 + 8, d.cookie);
}

Result<Descriptor> decode_descriptor(const std::byte* in16) {
  Descriptor d;
  d.offset = get_le<std::uint32_t>(in16);
  d.length = get_le<std::uint16_t>(in16 + 4);
  const auto kind = get_le<std::uint16_t>(in16 + 6);
  d.cookie = get_le<std::uint64_t>(in16 + 8);
  switch (static_cast<DescriptorKind>(kind)) {
    case DescriptorKind::kFrame:
      if (d.length < kMinFrameBytes || d.length > kNetBufferBytes) {
        return bad("frame of " + std::to_string(d.length) + " bytes");
      }
      if (d.cookie != 0) return bad("frame with a cookie");
      break;
    case DescriptorKind::kCredit:
      if (d.length != 0 || d.cookie != 0) return bad("credit with a length or cookie");
      break;
    case DescriptorKind::kAnnounce:
      if (d.offset != 0 || d.length != 0 || d.cookie >> 48 != 0) return bad("announcement with a buffer or a long MAC");
      break;
    default: return bad("unknown kind " + std::to_string(kind));
  }
  d.kind = static_cast<DescriptorKind>(kind);
  return d;
}

Result<std::span<std::byte>> frame_bytes(std::span<std::byte> area, const Descriptor& frame) {
  if (frame.offset % kNetBufferBytes != 0 || frame.offset >= area.size() ||
      area.size() - frame.offset < kNetBufferBytes) {
    return bad("buffer at offset " + std::to_string(frame.offset) + " is not one of the " +
               std::to_string(area.size() / kNetBufferBytes) + " buffers of its area");
  }
  return area.subspan(frame.offset, frame.length);
}

}  // namespace cxlpool::devpool::net
