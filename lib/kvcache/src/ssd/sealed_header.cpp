// SPDX-License-Identifier: Apache-2.0
#include "sealed_header.hpp"

#include <cerrno>
#include <string>

#include "cxlpool/kvcache/ssd_format.hpp"

namespace cxlpool::kvcache::ssd_detail {

Result<void> check_sealed_header(std::span<const std::byte> bytes, const SealedHeaderLayout& layout) {
  const std::string what = layout.what;
  if (bytes.size() < layout.bytes) {
    return fail(EBADMSG, what + " truncated: " + std::to_string(bytes.size()) + " of " + std::to_string(layout.bytes) +
                             " bytes");
  }
  const std::byte* p = bytes.data();
  if (all_zero(p, layout.bytes)) return fail(ENODATA, layout.zero_message);
  if (load_le<std::uint32_t>(p + kOffMagic) != layout.magic) return fail(EBADMSG, what + ": bad magic");
  if (load_le<std::uint32_t>(p + layout.crc_offset()) != crc32c(bytes.first(layout.crc_offset()))) {
    return fail(EBADMSG, what + ": CRC mismatch");
  }
  const auto version = load_le<std::uint16_t>(p + kOffVersion);
  if (version != kSsdFormatVersion) {
    return fail(ENOTSUP, what + ": format version " + std::to_string(version) + " (this reader knows " +
                             std::to_string(kSsdFormatVersion) + ")");
  }
  return {};
}

Result<void> check_flags_and_reserved(const std::byte* p, std::uint16_t flags, const SealedHeaderLayout& layout) {
  const std::string what = layout.what;
  if ((flags & ~layout.known_flags) != 0) return fail(EBADMSG, what + ": unknown flags");
  if (!all_zero(p + layout.reserved_offset, layout.crc_offset() - layout.reserved_offset)) {
    return fail(EBADMSG, what + ": reserved bytes set");
  }
  return {};
}

}  // namespace cxlpool::kvcache::ssd_detail
