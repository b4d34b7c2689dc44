// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/kvcache/s3fifo.hpp"

#include <algorithm>
#include <cmath>

namespace cxlpool::kvcache {

S3FifoPolicy::S3FifoPolicy(const S3FifoConfig& config) : config_(config) {
  config_.small_ratio = std::clamp(config_.small_ratio, 0.0, 1.0);
}

bool S3FifoPolicy::in_small(const ChunkKey& key) const {
  auto it = nodes_.find(key);
  return it != nodes_.end() && !it->second.in_main;
}

bool S3FifoPolicy::in_main(const ChunkKey& key) const {
  auto it = nodes_.find(key);
  return it != nodes_.end() && it->second.in_main;
}

std::size_t S3FifoPolicy::small_target() const {
  const auto t = static_cast<std::size_t>(std::ceil(config_.small_ratio * static_cast<double>(nodes_.size())));
  return std::max<std::size_t>(t, 1);
}

void S3FifoPolicy::remember_ghost(const ChunkKey& key) {
  if (ghost_pos_.contains(key)) return;
  ghost_.push_front(key);
  ghost_pos_.emplace(key, ghost_.begin());
  const std::size_t cap =
      config_.ghost_capacity != 0 ? config_.ghost_capacity : std::max<std::size_t>(nodes_.size(), 1);
  while (ghost_.size() > cap) {
    ghost_pos_.erase(ghost_.back());
    ghost_.pop_back();
  }
}

void S3FifoPolicy::insert(const ChunkKey& key) {
  if (nodes_.contains(key)) {
    touch(key);
    return;
  }
  ++stats_.inserts;
  Node n;
  if (auto g = ghost_pos_.find(key); g != ghost_pos_.end()) {
    ghost_.erase(g->second);
    ghost_pos_.erase(g);
    ++s3_stats_.ghost_hits;
    n.in_main = true;
    main_.push_front(key);
    n.pos = main_.begin();
  } else {
    small_.push_front(key);
    n.pos = small_.begin();
  }
  nodes_.emplace(key, n);
}

void S3FifoPolicy::touch(const ChunkKey& key) {
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return;
  ++stats_.touches;
  // Only a counter: no list movement on hit is what makes S3-FIFO cheap.
  if (it->second.freq < kMaxFreq) ++it->second.freq;
}

bool S3FifoPolicy::remove(const ChunkKey& key) {
  auto it = nodes_.find(key);
  if (it == nodes_.end()) return false;
  (it->second.in_main ? main_ : small_).erase(it->second.pos);
  nodes_.erase(it);
  ++stats_.removes;
  return true;
}

std::optional<ChunkKey> S3FifoPolicy::choose_victim(const PinnedFn& pinned) {
  // Pinned chunks rotate to their queue's head. In small every unpinned tail
  // leaves the queue, so meeting as many pinned chunks as small holds means
  // only pinned ones remain. In main an unpinned chunk can be reinserted up to
  // kMaxFreq times first, so main is exhausted after (kMaxFreq + 1) passes.
  std::size_t small_skips = 0;
  std::size_t main_skips = 0;
  for (;;) {
    const bool small_ok = small_skips < small_.size();
    const bool main_ok = main_skips < (kMaxFreq + 1u) * main_.size();
    if (!small_ok && !main_ok) return std::nullopt;
    const bool from_small = small_ok && (!main_ok || small_.size() >= small_target());
    List& q = from_small ? small_ : main_;
    const ChunkKey k = q.back();
    Node& n = nodes_.at(k);
    if (pinned && pinned(k)) {
      ++stats_.pinned_skips;
      ++(from_small ? small_skips : main_skips);
      q.splice(q.begin(), q, n.pos);
      continue;
    }
    if (from_small) {
      if (n.freq >= config_.move_to_main_threshold) {
        main_.splice(main_.begin(), small_, n.pos);
        n.in_main = true;
        n.freq = 0;
        ++s3_stats_.moved_to_main;
        continue;
      }
      small_.pop_back();
      nodes_.erase(k);
      ++s3_stats_.evicted_small;
      ++stats_.evictions;
      remember_ghost(k);
      return k;
    }
    if (n.freq > 0) {
      --n.freq;
      main_.splice(main_.begin(), main_, n.pos);
      ++s3_stats_.reinserted;
      continue;
    }
    main_.pop_back();
    nodes_.erase(k);
    ++s3_stats_.evicted_main;
    ++stats_.evictions;
    return k;
  }
}

}  // namespace cxlpool::kvcache
