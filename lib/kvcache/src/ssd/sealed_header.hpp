// SPDX-License-Identifier: Apache-2.0
#pragma once
// The checks every CRC-sealed header of the SSD format (region and entry
// headers) starts with, in this order: long enough, ever written (not all
// zero), its magic, its CRC32C over the bytes before the CRC field, then the
// format version — checked after the CRC so that a torn header never passes
// for a newer format.
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/result.hpp"

namespace cxlpool::kvcache::ssd_detail {

struct SealedHeaderLayout {
  const char* what;          // "region header", "entry header"
  const char* zero_message;  // the ENODATA message for an all-zero header
  std::size_t bytes;         // header size
  std::uint32_t magic;
  std::size_t magic_offset;
  std::size_t version_offset;
  std::size_t crc_offset;
};

// EBADMSG (truncated, bad magic, CRC mismatch), ENODATA (all zero), ENOTSUP
// (another format version).
Result<void> check_sealed_header(std::span<const std::byte> bytes, const SealedHeaderLayout& layout);

}  // namespace cxlpool::kvcache::ssd_detail
