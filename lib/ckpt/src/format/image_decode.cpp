// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/ckpt/image_reader.hpp"
#include "cxlpool/ckpt/manifest_codec.hpp"
#include "cxlpool/common/crc32c.hpp"
#include "image_manifest_check.hpp"

namespace cxlpool::ckpt {

Result<Manifest> detail::check_image_manifest(const ImageHeader& h, std::span<const std::byte> bytes) {
  if (crc32c(bytes) != h.manifest_crc32c) return fail(EBADMSG, "checkpoint image: manifest checksum mismatch");
  auto m = decode_manifest(bytes);
  if (!m) return m;
  if (m->image_data_offset != h.data_offset || m->image_data_bytes != h.data_bytes) {
    return fail(EBADMSG, "checkpoint image: header and manifest disagree on the page data area");
  }
  return m;
}

Result<Manifest> decode_image(std::span<const std::byte> image) {
  auto header = decode_image_header(image, image.size());
  if (!header) return tl::unexpected(header.error());
  return detail::check_image_manifest(*header, image.subspan(header->manifest_offset, header->manifest_bytes));
}

}  // namespace cxlpool::ckpt
