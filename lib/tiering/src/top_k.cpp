// SPDX-License-Identifier: Apache-2.0
#include "cxlpool/tiering/top_k.hpp"

#include <algorithm>

namespace cxlpool::tiering {

TopK::TopK(std::size_t k) : k_(k) {
  heap_.reserve(k);
  slot_of_.reserve(k);
}

void TopK::place(std::size_t i, const KeyCount& e) {
  heap_[i] = e;
  slot_of_[e.key] = i;
}

void TopK::sift_up(std::size_t i) {
  const KeyCount e = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 2;
    if (heap_[parent].count <= e.count) break;
    place(i, heap_[parent]);
    i = parent;
  }
  place(i, e);
}

void TopK::sift_down(std::size_t i) {
  const KeyCount e = heap_[i];
  const std::size_t n = heap_.size();
  for (;;) {
    std::size_t child = 2 * i + 1;
    if (child >= n) break;
    if (child + 1 < n && heap_[child + 1].count < heap_[child].count) ++child;
    if (heap_[child].count >= e.count) break;
    place(i, heap_[child]);
    i = child;
  }
  place(i, e);
}

void TopK::offer(std::uint64_t key, std::uint32_t count) {
  if (k_ == 0) return;
  const bool full = heap_.size() == k_;
  // A full set's minimum is a lower bound on every member's count, and counts
  // only grow: a count at or below it changes nothing, member or not.
  if (full && count <= heap_[0].count) return;
  if (auto it = slot_of_.find(key); it != slot_of_.end()) {
    const std::size_t i = it->second;
    if (count <= heap_[i].count) return;
    heap_[i].count = count;
    sift_down(i);
    return;
  }
  if (!full) {
    heap_.push_back({key, count});
    slot_of_[key] = heap_.size() - 1;
    sift_up(heap_.size() - 1);
    return;
  }
  slot_of_.erase(heap_[0].key);
  place(0, {key, count});
  sift_down(0);
}

std::vector<KeyCount> TopK::sorted() const {
  std::vector<KeyCount> out(heap_);
  std::sort(out.begin(), out.end(), [](const KeyCount& a, const KeyCount& b) {
    return a.count != b.count ? a.count > b.count : a.key < b.key;
  });
  return out;
}

void TopK::clear() {
  heap_.clear();
  slot_of_.clear();
}

}  // namespace cxlpool::tiering
