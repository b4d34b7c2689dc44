// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/eviction.hpp"

#include <string>

#include "cxlpool/kvcache/lru.hpp"
#include "cxlpool/kvcache/s3fifo.hpp"

namespace cxlpool::kvcache {

Result<EvictionKind> parse_eviction_kind(std::string_view name) {
  if (name == "lru") return EvictionKind::kLru;
  if (name == "s3fifo" || name == "s3-fifo") return EvictionKind::kS3Fifo;
  return fail(EINVAL, "unknown eviction policy '" + std::string(name) + "' (lru, s3fifo)");
}

std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, const S3FifoConfig& s3) {
  switch (kind) {
    case EvictionKind::kS3Fifo: return std::make_unique<S3FifoPolicy>(s3);
    case EvictionKind::kLru: break;
  }
  return std::make_unique<LruPolicy>();
}

}  // namespace cxlpool::kvcache
