// SPDX-License-Identifier: Apache-2.0
#pragma once
// A KV namespace: chunks computed by one model, with one layout, dtype and
// tensor-parallel rank, are interchangeable; anything else must never match.
// Its fingerprint is XXH3-128 (seed 0) of this byte serialization:
//   "CXKVNS\x01\x00"                      8 bytes, tag + format version 1
//   u32 LE len | model_id bytes          (UTF-8 as given, no terminator)
//   u32 LE len | layout bytes
//   u32 LE len | dtype bytes
//   u32 LE tp_rank | u32 LE tp_size | u32 LE chunk_tokens
// chunk_tokens is part of it: the same tokens cut at different sizes are
// different tensors.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cxlpool::kvcache {

inline constexpr std::uint32_t kDefaultChunkTokens = 256;

struct NamespaceFingerprint {
  std::uint64_t hi = 0;
  std::uint64_t lo = 0;
  friend bool operator==(const NamespaceFingerprint&, const NamespaceFingerprint&) = default;
};

struct NamespaceSpec {
  std::string model_id;  // e.g. a model name plus a weights digest
  std::string layout;    // e.g. "vllm-paged-nhd"
  std::string dtype;     // e.g. "bf16"
  std::uint32_t tp_rank = 0;
  std::uint32_t tp_size = 1;
  std::uint32_t chunk_tokens = kDefaultChunkTokens;
};

// The exact bytes that are hashed (exposed for tests and other languages).
[[nodiscard]] std::vector<std::uint8_t> serialize_namespace(const NamespaceSpec& spec);
[[nodiscard]] NamespaceFingerprint fingerprint(const NamespaceSpec& spec);

// A spec with its fingerprint computed once.
struct Namespace {
  NamespaceSpec spec;
  NamespaceFingerprint fp;

  explicit Namespace(NamespaceSpec s) : spec(std::move(s)), fp(fingerprint(spec)) {}
};

}  // namespace cxlpool::kvcache
