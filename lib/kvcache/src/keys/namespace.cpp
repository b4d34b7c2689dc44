// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/namespace.hpp"

#include <xxhash.h>

#include "le_bytes.hpp"

namespace cxlpool::kvcache {

namespace {
constexpr std::uint8_t kTag[8] = {'C', 'X', 'K', 'V', 'N', 'S', 1, 0};

void put_string(std::vector<std::uint8_t>& out, const std::string& s) {
  put_le32(out, static_cast<std::uint32_t>(s.size()));
  out.insert(out.end(), s.begin(), s.end());
}
}  // namespace

std::vector<std::uint8_t> serialize_namespace(const NamespaceSpec& spec) {
  std::vector<std::uint8_t> out(std::begin(kTag), std::end(kTag));
  put_string(out, spec.model_id);
  put_string(out, spec.layout);
  put_string(out, spec.dtype);
  put_le32(out, spec.tp_rank);
  put_le32(out, spec.tp_size);
  put_le32(out, spec.chunk_tokens);
  return out;
}

NamespaceFingerprint fingerprint(const NamespaceSpec& spec) {
  const auto bytes = serialize_namespace(spec);
  const XXH128_hash_t h = XXH3_128bits(bytes.data(), bytes.size());
  return {h.high64, h.low64};
}

}  // namespace cxlpool::kvcache
