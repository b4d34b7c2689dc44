// SPDX-License-Identifier: Apache-2.0
// The first 4 KiB of a checkpoint image: where the manifest and the page data
// lie in the file, and the checksums that tell a torn or foreign file from an
// image (docs/ckpt.md "Image format").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt {

inline constexpr uint64_t kImageHeaderBytes = 4096;
inline constexpr std::array<char, 8> kImageMagic = {'C', 'X', 'L', 'C', 'K', 'P', 'T', '\0'};
// A manifest larger than this is refused before anything is allocated for it.
inline constexpr uint64_t kMaxManifestBytes = 256ull << 20;

struct ImageHeader {
  uint32_t version = 0;
  uint64_t manifest_offset = 0, manifest_bytes = 0;
  uint32_t manifest_crc32c = 0;
  uint64_t data_offset = 0, data_bytes = 0;  // page aligned
};

using ImageHeaderBytes = std::array<std::byte, kImageHeaderBytes>;

// The header's bytes, its own CRC-32C filled in.
[[nodiscard]] ImageHeaderBytes encode_image_header(const ImageHeader& header);

// Decodes the front of an image of `file_bytes` bytes. Errors: EBADMSG (not
// an image, a bad checksum, a range outside the file or overlapping the other
// one, reserved bytes set), ENOTSUP (an image version this build cannot read).
[[nodiscard]] Result<ImageHeader> decode_image_header(std::span<const std::byte> bytes, uint64_t file_bytes);

}  // namespace cxlpool::ckpt
