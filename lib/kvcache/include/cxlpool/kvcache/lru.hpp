// SPDX-License-Identifier: Apache-2.0
#pragma once
// Least-recently-used: a recency list, most recent at the front. Pinned
// chunks at the tail are passed over in place, so a victim search costs
// O(pinned chunks at the cold end).
#include <list>
#include <unordered_map>

#include "cxlpool/kvcache/eviction.hpp"

namespace cxlpool::kvcache {

class LruPolicy final : public EvictionPolicy {
 public:
  void insert(const ChunkKey& key) override;
  void touch(const ChunkKey& key) override;
  bool remove(const ChunkKey& key) override;
  std::optional<ChunkKey> choose_victim(const PinnedFn& pinned) override;
  [[nodiscard]] bool contains(const ChunkKey& key) const override { return pos_.contains(key); }
  [[nodiscard]] std::size_t size() const override { return order_.size(); }
  [[nodiscard]] std::string_view name() const override { return "lru"; }

 private:
  std::list<ChunkKey> order_;
  std::unordered_map<ChunkKey, std::list<ChunkKey>::iterator, ChunkKeyHash> pos_;
};

}  // namespace cxlpool::kvcache
