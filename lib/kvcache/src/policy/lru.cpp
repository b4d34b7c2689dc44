// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/lru.hpp"

namespace cxlpool::kvcache {

void LruPolicy::insert(const ChunkKey& key) {
  if (auto it = pos_.find(key); it != pos_.end()) {
    order_.splice(order_.begin(), order_, it->second);
    ++stats_.touches;
    return;
  }
  order_.push_front(key);
  pos_.emplace(key, order_.begin());
  ++stats_.inserts;
}

void LruPolicy::touch(const ChunkKey& key) {
  auto it = pos_.find(key);
  if (it == pos_.end()) return;
  order_.splice(order_.begin(), order_, it->second);
  ++stats_.touches;
}

bool LruPolicy::remove(const ChunkKey& key) {
  auto it = pos_.find(key);
  if (it == pos_.end()) return false;
  order_.erase(it->second);
  pos_.erase(it);
  ++stats_.removes;
  return true;
}

std::optional<ChunkKey> LruPolicy::choose_victim(const PinnedFn& pinned) {
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    if (pinned && pinned(*it)) {
      ++stats_.pinned_skips;
      continue;
    }
    const ChunkKey victim = *it;
    order_.erase(std::next(it).base());
    pos_.erase(victim);
    ++stats_.evictions;
    return victim;
  }
  return std::nullopt;
}

}  // namespace cxlpool::kvcache
