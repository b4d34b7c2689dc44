// SPDX-License-Identifier: Apache-2.0
#pragma once
// Eviction policy of one tier. The store tells it what became resident
// (insert), what was used (touch) and what left for another reason (remove),
// and asks it for a victim when the tier is full. choose_victim never returns
// a pinned chunk (leased to a reader): it asks `pinned` and skips those. The
// victim it returns is no longer tracked; if the store cannot evict it after
// all, it inserts it again. Not thread-safe: the store serializes each tier.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "cxlpool/common/result.hpp"
#include "cxlpool/kvcache/chunk_key.hpp"

namespace cxlpool::kvcache {

using PinnedFn = std::function<bool(const ChunkKey&)>;

struct EvictionStats {
  std::uint64_t inserts = 0;
  std::uint64_t touches = 0;
  std::uint64_t removes = 0;
  std::uint64_t evictions = 0;
  std::uint64_t pinned_skips = 0;  // pinned chunks passed over
};

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  // A chunk became resident; a key already tracked counts as a touch.
  virtual void insert(const ChunkKey& key) = 0;
  // A resident chunk was used; unknown keys are ignored.
  virtual void touch(const ChunkKey& key) = 0;
  // A chunk left the tier other than by eviction; false if unknown.
  virtual bool remove(const ChunkKey& key) = 0;
  // nullopt when empty or every tracked chunk is pinned.
  virtual std::optional<ChunkKey> choose_victim(const PinnedFn& pinned) = 0;
  [[nodiscard]] virtual bool contains(const ChunkKey& key) const = 0;
  [[nodiscard]] virtual std::size_t size() const = 0;
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] const EvictionStats& stats() const { return stats_; }

 protected:
  EvictionStats stats_;
};

enum class EvictionKind : std::uint8_t { kLru, kS3Fifo };

struct S3FifoConfig {
  double small_ratio = 0.10;             // small queue share of resident chunks
  std::uint32_t move_to_main_threshold = 1;  // hits while in small to be kept
  std::size_t ghost_capacity = 0;        // 0: as many as are resident
};

// "lru" or "s3fifo"; EINVAL otherwise.
Result<EvictionKind> parse_eviction_kind(std::string_view name);
std::unique_ptr<EvictionPolicy> make_eviction_policy(EvictionKind kind, const S3FifoConfig& s3 = {});

}  // namespace cxlpool::kvcache
