// SPDX-License-Identifier: Apache-2.0
// The K keys with the highest counts offered during an epoch.
//
// A min-heap of (key, count) plus a key -> heap-slot index: offer() is O(log K)
// when it changes the set and O(1) when the count cannot enter it. Counts for a
// key must not decrease within an epoch (true for Count-Min estimates); clear()
// starts the next epoch.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace cxlpool::tiering {

struct KeyCount {
  std::uint64_t key = 0;
  std::uint32_t count = 0;
  friend bool operator==(const KeyCount&, const KeyCount&) = default;
};

class TopK {
 public:
  // k == 0 tracks nothing.
  explicit TopK(std::size_t k);

  // Records that `key` has reached `count`.
  void offer(std::uint64_t key, std::uint32_t count);

  // Highest count first; ties by ascending key so the order is deterministic.
  std::vector<KeyCount> sorted() const;

  bool contains(std::uint64_t key) const { return slot_of_.count(key) != 0; }
  std::size_t size() const { return heap_.size(); }
  std::size_t capacity() const { return k_; }
  // Smallest count in the set, 0 while it is not full.
  std::uint32_t threshold() const { return heap_.size() < k_ || heap_.empty() ? 0 : heap_[0].count; }
  void clear();

 private:
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void place(std::size_t i, const KeyCount& e);

  std::size_t k_;
  std::vector<KeyCount> heap_;
  std::unordered_map<std::uint64_t, std::size_t> slot_of_;
};

}  // namespace cxlpool::tiering
