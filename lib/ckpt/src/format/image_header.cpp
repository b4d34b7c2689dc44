// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/image_header.hpp"

#include <algorithm>
#include <string>

#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "le_bytes.hpp"

namespace cxlpool::ckpt {
namespace {

// Byte offsets in the header.
constexpr std::size_t kVersionAt = 8, kHeaderBytesAt = 12, kManifestOffsetAt = 16, kManifestBytesAt = 24,
                      kDataOffsetAt = 32, kDataBytesAt = 40, kManifestCrcAt = 48, kFlagsAt = 52,
                      kHeaderCrcAt = 56, kReservedAt = 60;

void put_le(ImageHeaderBytes& b, std::size_t at, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b[at + i] = std::byte{static_cast<uint8_t>(v >> (8 * i))};
}

uint64_t get_le(std::span<const std::byte> b, std::size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(std::to_integer<uint8_t>(b[at + i])) << (8 * i);
  return v;
}

bool overflows(uint64_t a, uint64_t b) { return a + b < a; }

}  // namespace

ImageHeaderBytes encode_image_header(const ImageHeader& h) {
  ImageHeaderBytes b{};
  std::copy(kImageMagic.begin(), kImageMagic.end(), reinterpret_cast<char*>(b.data()));
  put_le(b, kVersionAt, h.version, 4);
  put_le(b, kHeaderBytesAt, kImageHeaderBytes, 4);
  put_le(b, kManifestOffsetAt, h.manifest_offset, 8);
  put_le(b, kManifestBytesAt, h.manifest_bytes, 8);
  put_le(b, kDataOffsetAt, h.data_offset, 8);
  put_le(b, kDataBytesAt, h.data_bytes, 8);
  put_le(b, kManifestCrcAt, h.manifest_crc32c, 4);
  put_le(b, kHeaderCrcAt, crc32c(std::span(b).first(kHeaderCrcAt)), 4);
  return b;
}

Result<ImageHeader> decode_image_header(std::span<const std::byte> b, uint64_t file_bytes) {
  if (b.size() < kImageHeaderBytes || file_bytes < kImageHeaderBytes) {
    return fail(EBADMSG, "checkpoint image: shorter than its 4096-byte header");
  }
  if (!std::equal(kImageMagic.begin(), kImageMagic.end(), reinterpret_cast<const char*>(b.data()))) {
    return fail(EBADMSG, "checkpoint image: no CXLCKPT magic (not a checkpoint image)");
  }
  ImageHeader h;
  h.version = static_cast<uint32_t>(get_le(b, kVersionAt, 4));
  if (h.version != kFormatVersion) {
    return fail(ENOTSUP, "checkpoint image: format version " + std::to_string(h.version) +
                             ", this build reads version " + std::to_string(kFormatVersion));
  }
  if (get_le(b, kHeaderCrcAt, 4) != crc32c(b.first(kHeaderCrcAt))) {
    return fail(EBADMSG, "checkpoint image: header checksum mismatch");
  }
  if (get_le(b, kHeaderBytesAt, 4) != kImageHeaderBytes) {
    return fail(EBADMSG, "checkpoint image: header length is not 4096");
  }
  if (get_le(b, kFlagsAt, 4) != 0) return fail(EBADMSG, "checkpoint image: unknown header flags");
  const auto reserved = b.subspan(kReservedAt, kImageHeaderBytes - kReservedAt);
  if (std::any_of(reserved.begin(), reserved.end(), [](std::byte x) { return x != std::byte{0}; })) {
    return fail(EBADMSG, "checkpoint image: reserved header bytes are set");
  }
  h.manifest_offset = get_le(b, kManifestOffsetAt, 8);
  h.manifest_bytes = get_le(b, kManifestBytesAt, 8);
  h.data_offset = get_le(b, kDataOffsetAt, 8);
  h.data_bytes = get_le(b, kDataBytesAt, 8);
  h.manifest_crc32c = static_cast<uint32_t>(get_le(b, kManifestCrcAt, 4));
  if (h.manifest_bytes == 0 || h.manifest_bytes > kMaxManifestBytes) {
    return fail(EBADMSG, "checkpoint image: manifest length " + std::to_string(h.manifest_bytes) + " out of range");
  }
  if (h.manifest_offset < kImageHeaderBytes || overflows(h.manifest_offset, h.manifest_bytes) ||
      h.manifest_offset + h.manifest_bytes > file_bytes) {
    return fail(EBADMSG, "checkpoint image: manifest lies outside the file");
  }
  if (h.data_offset % kPageSize != 0 || h.data_bytes % kPageSize != 0) {
    return fail(EBADMSG, "checkpoint image: page data area is not page aligned");
  }
  if (h.data_offset < kImageHeaderBytes || overflows(h.data_offset, h.data_bytes) ||
      h.data_offset + h.data_bytes > file_bytes) {
    return fail(EBADMSG, "checkpoint image: page data area lies outside the file");
  }
  if (h.data_bytes != 0 && h.manifest_offset < h.data_offset + h.data_bytes &&
      h.data_offset < h.manifest_offset + h.manifest_bytes) {
    return fail(EBADMSG, "checkpoint image: manifest overlaps the page data");
  }
  return h;
}

}  // namespace cxlpool::ckpt
