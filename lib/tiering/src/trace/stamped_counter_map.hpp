// SPDX-License-Identifier: Apache-2.0
// Exact per-key counters for one epoch: open addressing (linear probing) with
// an epoch stamp per slot, so clearing the table is a stamp increment rather
// than a pass over every slot, and a list of the slots used this epoch, so
// handing out the epoch costs O(keys touched), not O(table).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cxlpool/tiering/mix.hpp"

namespace cxlpool::tiering::trace_detail {

template <typename Value>
class StampedCounterMap {
 public:
  struct Slot {
    std::uint64_t key = 0;
    std::uint32_t stamp = 0;  // live in this epoch iff == stamp_
    Value value{};
  };

  explicit StampedCounterMap(std::size_t expected) {
    slots_.resize(std::bit_ceil(std::max<std::size_t>(16, expected * 2)));
  }

  // The key's value, inserted as Value{} if absent this epoch.
  Value& upsert(std::uint64_t key) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.stamp != stamp_) {
        s = Slot{key, stamp_, Value{}};
        used_.push_back(static_cast<std::uint32_t>(i));
        return s.value;
      }
      if (s.key == key) return s.value;
    }
  }

  // Warms the key's home slot for an upsert a few accesses later.
  void prefetch(std::uint64_t key) const { __builtin_prefetch(&slots_[mix64(key) & (slots_.size() - 1)], 1); }

  const Value* find(std::uint64_t key) const {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = mix64(key) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (s.stamp != stamp_) return nullptr;
      if (s.key == key) return &s.value;
    }
  }

  template <typename F>
  void for_each(F&& f) const {
    for (const std::uint32_t i : used_) f(slots_[i].key, slots_[i].value);
  }

  void clear() {
    used_.clear();
    if (++stamp_ == 0) {
      // Wrapped after 2^32 epochs: old stamps could look live again.
      for (Slot& s : slots_) s.stamp = 0;
      stamp_ = 1;
    }
  }

  std::size_t size() const { return used_.size(); }
  std::size_t memory_bytes() const {
    return slots_.capacity() * sizeof(Slot) + used_.capacity() * sizeof(std::uint32_t);
  }

 private:
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(old.size() * 2);
    std::vector<std::uint32_t> live;
    live.swap(used_);
    used_.reserve(live.size() * 2);
    const std::size_t mask = slots_.size() - 1;
    for (const std::uint32_t j : live) {
      std::size_t i = mix64(old[j].key) & mask;
      while (slots_[i].stamp == stamp_) i = (i + 1) & mask;
      slots_[i] = old[j];
      used_.push_back(static_cast<std::uint32_t>(i));
    }
  }

  std::vector<Slot> slots_;
  std::vector<std::uint32_t> used_;  // slot indices live this epoch, insertion order
  std::uint32_t stamp_ = 1;          // slots start at stamp 0: empty
};

}  // namespace cxlpool::tiering::trace_detail
