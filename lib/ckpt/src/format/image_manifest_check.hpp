// SPDX-License-Identifier: Apache-2.0
// What a reader checks once it holds a decoded header and the manifest's
// bytes, shared by the file reader and decode_image.
#pragma once

#include <cstddef>
#include <span>

#include "cxlpool/ckpt/image_header.hpp"
#include "cxlpool/ckpt/manifest.hpp"
#include "cxlpool/common/result.hpp"

namespace cxlpool::ckpt::detail {

// The manifest checksum, decode_manifest, and that header and manifest name
// the same page data area.
Result<Manifest> check_image_manifest(const ImageHeader& header, std::span<const std::byte> manifest_bytes);

}  // namespace cxlpool::ckpt::detail
