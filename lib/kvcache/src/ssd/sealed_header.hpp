// SPDX-License-Identifier: Apache-2.0
#pragma once
// What every CRC-sealed header of the SSD format (region and entry headers)
// shares: it starts with magic (u32), version (u16) and flags (u16), ends
// with a CRC32C of all the bytes before it, and keeps zero reserved bytes in
// front of the CRC. Each header lists its own fields once (HeaderFields);
// its encoder and decoder are both derived from that list.
//
// Decoding checks, in this order: long enough, ever written (not all zero),
// its magic, its CRC, then the format version — checked after the CRC so that
// a torn header never passes for a newer format — then unknown flags and
// reserved bytes. Checks of the header's own fields are its decoder's.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "cxlpool/common/crc32c.hpp"
#include "cxlpool/common/result.hpp"
#include "le_fields.hpp"

namespace cxlpool::kvcache::ssd_detail {

inline constexpr std::size_t kOffMagic = 0;
inline constexpr std::size_t kOffVersion = 4;
inline constexpr std::size_t kOffFlags = 6;
inline constexpr std::size_t kCrcBytes = 4;

struct SealedHeaderLayout {
  const char* what;             // "region header", "entry header"
  const char* zero_message;     // the ENODATA message for an all-zero header
  std::size_t bytes;            // header size, the CRC included
  std::uint32_t magic;
  std::uint16_t known_flags;
  std::size_t reserved_offset;  // zero from here up to the CRC

  [[nodiscard]] constexpr std::size_t crc_offset() const { return bytes - kCrcBytes; }
};

// One little-endian field: the decoded header's `Member`, at byte `Offset`.
template <auto Member, std::size_t Offset>
struct LeField {
  template <typename Header>
  static void store(std::byte* out, const Header& h) {
    store_value(out + Offset, h.*Member);
  }
  template <typename Header>
  static void load(const std::byte* in, Header& h) {
    load_value(in + Offset, h.*Member);
  }
};

// A header's fields after magic, version and flags.
template <typename... Fields>
struct HeaderFields {
  template <typename Header>
  static void store(std::byte* out, const Header& h) {
    (Fields::store(out, h), ...);
  }
  template <typename Header>
  static void load(const std::byte* in, Header& h) {
    (Fields::load(in, h), ...);
  }
};

// EBADMSG (truncated, bad magic, CRC mismatch), ENODATA (all zero), ENOTSUP
// (another format version).
Result<void> check_sealed_header(std::span<const std::byte> bytes, const SealedHeaderLayout& layout);

// EBADMSG: unknown flags, reserved bytes set.
Result<void> check_flags_and_reserved(const std::byte* p, std::uint16_t flags, const SealedHeaderLayout& layout);

template <typename Fields, std::size_t Bytes, typename Header>
std::array<std::byte, Bytes> encode_sealed(const Header& h, const SealedHeaderLayout& layout) {
  std::array<std::byte, Bytes> b{};
  store_le<std::uint32_t>(&b[kOffMagic], layout.magic);
  store_le<std::uint16_t>(&b[kOffVersion], h.version);
  store_le<std::uint16_t>(&b[kOffFlags], h.flags);
  Fields::store(b.data(), h);
  store_le<std::uint32_t>(&b[layout.crc_offset()], crc32c(std::span(b).first(layout.crc_offset())));
  return b;
}

// The header with every field read, once the checks above and then the
// header's own `check_fields` have passed.
template <typename Fields, typename Header>
Result<Header> decode_sealed(std::span<const std::byte> bytes, const SealedHeaderLayout& layout,
                             Result<void> (*check_fields)(const Header&)) {
  if (auto ok = check_sealed_header(bytes, layout); !ok) return tl::unexpected(ok.error());
  const std::byte* p = bytes.data();
  Header h;
  h.version = load_le<std::uint16_t>(p + kOffVersion);
  h.flags = load_le<std::uint16_t>(p + kOffFlags);
  Fields::load(p, h);
  if (auto ok = check_flags_and_reserved(p, h.flags, layout); !ok) return tl::unexpected(ok.error());
  if (auto ok = check_fields(h); !ok) return tl::unexpected(ok.error());
  return h;
}

}  // namespace cxlpool::kvcache::ssd_detail
