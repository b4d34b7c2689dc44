// SPDX-License-Identifier: Apache-2.0
#include <climits>
#include <string>

#include "cxlpool/kvcache/chunk_key.hpp"
#include "cxlpool/proto/messages.hpp"
#include "kv_pure.hpp"

namespace cxlpool::client {
namespace {

Result<std::string> namespace_field(const char* value, const char* name) {
  if (value == nullptr || value[0] == '\0') return fail(EINVAL, std::string("namespace ") + name + " is empty");
  std::string s(value);
  if (s.size() > proto::kMaxKvNamespaceField) {
    return fail(EINVAL, std::string("namespace ") + name + " is longer than " +
                            std::to_string(proto::kMaxKvNamespaceField) + " bytes");
  }
  return s;
}

}  // namespace

Result<kvcache::NamespaceSpec> kv_namespace_spec(const cxlpool_kv_namespace_spec& spec) {
  kvcache::NamespaceSpec out;
  auto model = namespace_field(spec.model_id, "model_id");
  if (!model) return tl::unexpected(model.error());
  auto layout = namespace_field(spec.layout, "layout");
  if (!layout) return tl::unexpected(layout.error());
  auto dtype = namespace_field(spec.dtype, "dtype");
  if (!dtype) return tl::unexpected(dtype.error());
  if (spec.tp_size == 0) return fail(EINVAL, "namespace tp_size is 0");
  if (spec.tp_rank >= spec.tp_size) {
    return fail(EINVAL, "namespace tp_rank " + std::to_string(spec.tp_rank) + " is not below tp_size " +
                            std::to_string(spec.tp_size));
  }
  if ((spec.mode & ~0666u) != 0) return fail(EINVAL, "namespace mode has bits other than read and write (at most 0666)");
  out.model_id = std::move(*model);
  out.layout = std::move(*layout);
  out.dtype = std::move(*dtype);
  out.tp_rank = spec.tp_rank;
  out.tp_size = spec.tp_size;
  out.chunk_tokens = spec.chunk_tokens != 0 ? spec.chunk_tokens : kvcache::kDefaultChunkTokens;
  return out;
}

Result<size_t> kv_compute_keys(const cxlpool_kv_namespace& ns, std::span<const uint32_t> tokens,
                               const cxlpool_kv_key* parent, std::span<cxlpool_kv_key> keys) {
  if (ns.chunk_tokens == 0) return fail(EINVAL, "namespace has chunk_tokens 0");
  const size_t count = tokens.size() / ns.chunk_tokens;
  if (count > static_cast<size_t>(INT_MAX)) return fail(EOVERFLOW, "more keys than an int can count");
  if (count > keys.size()) {
    return fail(ENOSPC, std::to_string(count) + " keys do not fit in " + std::to_string(keys.size()));
  }
  const kvcache::NamespaceFingerprint fp{ns.fingerprint_hi, ns.fingerprint_lo};
  kvcache::ChunkKey prev = parent != nullptr ? kvcache::ChunkKey{parent->hi, parent->lo} : kvcache::kRootParent;
  for (size_t i = 0; i < count; ++i) {
    prev = kvcache::chunk_key(prev, tokens.subspan(i * ns.chunk_tokens, ns.chunk_tokens), fp);
    keys[i] = cxlpool_kv_key{prev.lo, prev.hi};
  }
  return count;
}

}  // namespace cxlpool::client
