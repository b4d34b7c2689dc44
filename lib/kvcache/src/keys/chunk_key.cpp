// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/chunk_key.hpp"

// The state lives on the stack; its layout is stable within xxhash 0.8.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>

#include "le_bytes.hpp"

namespace cxlpool::kvcache {

namespace {
constexpr std::size_t kSwapBatch = 256;  // tokens byte-swapped per update on BE hosts
}

ChunkKey chunk_key(const ChunkKey& parent, std::span<const TokenId> tokens,
                   const NamespaceFingerprint& ns) {
  XXH3_state_t state;
  XXH3_128bits_reset(&state);
  std::uint8_t head[32];
  store_le64(head, parent.hi);
  store_le64(head + 8, parent.lo);
  store_le64(head + 16, ns.hi);
  store_le64(head + 24, ns.lo);
  XXH3_128bits_update(&state, head, sizeof head);
  if constexpr (std::endian::native == std::endian::little) {
    XXH3_128bits_update(&state, tokens.data(), tokens.size_bytes());
  } else {
    std::array<std::uint8_t, kSwapBatch * 4> buf;
    for (std::size_t i = 0; i < tokens.size(); i += kSwapBatch) {
      const std::size_t n = std::min(kSwapBatch, tokens.size() - i);
      for (std::size_t j = 0; j < n; ++j) store_le32(buf.data() + 4 * j, tokens[i + j]);
      XXH3_128bits_update(&state, buf.data(), 4 * n);
    }
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&state);
  return {h.high64, h.low64};
}

std::size_t compute_chunk_keys(std::span<const TokenId> tokens, std::uint32_t chunk_tokens,
                               const NamespaceFingerprint& ns, std::vector<ChunkKey>& out,
                               const ChunkKey& parent) {
  if (chunk_tokens == 0) return 0;
  const std::size_t full = tokens.size() / chunk_tokens;
  // `parent` may be an element of `out` (continuing an earlier call): copy it
  // before reserve() can reallocate the vector under it.
  ChunkKey prev = parent;
  out.reserve(out.size() + full);
  for (std::size_t i = 0; i < full; ++i) {
    prev = chunk_key(prev, tokens.subspan(i * chunk_tokens, chunk_tokens), ns);
    out.push_back(prev);
  }
  return full * chunk_tokens;
}

std::string to_hex(const ChunkKey& key) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[15 - i] = kDigits[(key.hi >> (4 * i)) & 0xf];
    s[31 - i] = kDigits[(key.lo >> (4 * i)) & 0xf];
  }
  return s;
}

Result<ChunkKey> parse_chunk_key(std::string_view hex) {
  if (hex.size() != 32) return fail(EINVAL, "chunk key: want 32 hex digits");
  ChunkKey k;
  for (std::size_t i = 0; i < 32; ++i) {
    const char c = hex[i];
    unsigned v;
    if (c >= '0' && c <= '9') {
      v = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      v = static_cast<unsigned>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      v = static_cast<unsigned>(c - 'A' + 10);
    } else {
      return fail(EINVAL, "chunk key: not a hex digit");
    }
    std::uint64_t& half = i < 16 ? k.hi : k.lo;
    half = (half << 4) | v;
  }
  return k;
}

std::size_t compute_chunk_keys(std::span<const TokenId> tokens, const Namespace& ns,
                               std::vector<ChunkKey>& out, const ChunkKey& parent) {
  return compute_chunk_keys(tokens, ns.spec.chunk_tokens, ns.fp, out, parent);
}

}  // namespace cxlpool::kvcache
