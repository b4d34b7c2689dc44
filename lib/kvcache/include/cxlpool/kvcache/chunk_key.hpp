// SPDX-License-Identifier: Apache-2.0
#pragma once
// Chunk keys: a chunk is N consecutive token ids of a sequence. Its key chains
// the parent chunk's key, so equal keys mean equal prefixes, not just equal
// chunks (block hash chains as in Mooncake).
//
// key = XXH3-128 over the bytes
//   parent.hi (u64 LE) | parent.lo (u64 LE) | ns.hi (u64 LE) | ns.lo (u64 LE)
//   | token[0] (u32 LE) ... token[N-1] (u32 LE)
// with seed 0. The first chunk's parent is the all-zero key. Everything is
// hashed little-endian so keys are identical across runs and machines.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/namespace.hpp"

namespace cxlpool::kvcache {

using TokenId = std::uint32_t;

struct ChunkKey {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;

  friend bool operator==(const ChunkKey&, const ChunkKey&) = default;
  [[nodiscard]] bool is_zero() const { return hi == 0 && lo == 0; }
};

// Parent of the first chunk of every sequence.
inline constexpr ChunkKey kRootParent{};

// Key of one chunk; tokens.size() is the namespace's chunk size in normal use
// but is not checked here (the caller decides what a full chunk is).
[[nodiscard]] ChunkKey chunk_key(const ChunkKey& parent, std::span<const TokenId> tokens,
                                 const NamespaceFingerprint& ns);

// Keys of the FULL chunks of tokens, chained from `parent` (kRootParent for a
// sequence start), appended to out. A partial trailing chunk gets no key.
// Returns the number of tokens covered (a multiple of chunk_tokens).
// chunk_tokens == 0 covers nothing.
std::size_t compute_chunk_keys(std::span<const TokenId> tokens, std::uint32_t chunk_tokens,
                               const NamespaceFingerprint& ns, std::vector<ChunkKey>& out,
                               const ChunkKey& parent = kRootParent);

// Convenience: uses the namespace's own fingerprint and chunk size.
std::size_t compute_chunk_keys(std::span<const TokenId> tokens, const Namespace& ns,
                               std::vector<ChunkKey>& out, const ChunkKey& parent = kRootParent);

// 32 lowercase hex digits, hi then lo (how logs, the CLI and JSON show keys).
[[nodiscard]] std::string to_hex(const ChunkKey& key);
// Inverse of to_hex (either case); EINVAL on anything else.
[[nodiscard]] Result<ChunkKey> parse_chunk_key(std::string_view hex);

// Mixes a 128-bit key down to a well-distributed 64-bit table hash. The key is
// already a cryptographic-quality-ish hash, so folding is enough.
[[nodiscard]] inline std::uint64_t key_hash64(const ChunkKey& k) {
  return k.lo ^ (k.hi * 0x9E3779B97F4A7C15ULL);
}

struct ChunkKeyHash {
  std::size_t operator()(const ChunkKey& k) const noexcept { return key_hash64(k); }
};

}  // namespace cxlpool::kvcache
