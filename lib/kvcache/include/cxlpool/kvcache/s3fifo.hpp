// SPDX-License-Identifier: Apache-2.0
#pragma once
// S3-FIFO (Yang et al., SOSP'23): a small FIFO (about 10% of resident chunks)
// filters one-hit wonders, a main FIFO holds the rest with lazy reinsertion,
// a ghost FIFO remembers keys recently evicted from small.
// - new chunk: to main if its key is in the ghost, else to small; freq 0
// - hit: freq = min(freq + 1, 3)
// - evict from small while it is at or above its share: a tail chunk with
//   freq >= move_to_main_threshold moves to main (freq reset), else it is
//   evicted and its key enters the ghost
// - evict from main: a tail chunk with freq > 0 is reinserted at the head
//   with freq - 1, else evicted
// Pinned chunks are rotated to their queue's head without losing frequency.
#include <cstdint>
#include <list>
#include <unordered_map>

#include "cxlpool/kvcache/eviction.hpp"

namespace cxlpool::kvcache {

struct S3FifoStats {
  std::uint64_t ghost_hits = 0;      // inserts that went straight to main
  std::uint64_t moved_to_main = 0;   // small -> main on eviction
  std::uint64_t reinserted = 0;      // main tail -> main head
  std::uint64_t evicted_small = 0;
  std::uint64_t evicted_main = 0;
};

class S3FifoPolicy final : public EvictionPolicy {
 public:
  static constexpr std::uint8_t kMaxFreq = 3;

  explicit S3FifoPolicy(const S3FifoConfig& config = {});

  void insert(const ChunkKey& key) override;
  void touch(const ChunkKey& key) override;
  bool remove(const ChunkKey& key) override;
  std::optional<ChunkKey> choose_victim(const PinnedFn& pinned) override;
  [[nodiscard]] bool contains(const ChunkKey& key) const override { return nodes_.contains(key); }
  [[nodiscard]] std::size_t size() const override { return nodes_.size(); }
  [[nodiscard]] std::string_view name() const override { return "s3fifo"; }

  [[nodiscard]] std::size_t small_size() const { return small_.size(); }
  [[nodiscard]] std::size_t main_size() const { return main_.size(); }
  [[nodiscard]] std::size_t ghost_size() const { return ghost_.size(); }
  [[nodiscard]] bool in_small(const ChunkKey& key) const;
  [[nodiscard]] bool in_main(const ChunkKey& key) const;
  [[nodiscard]] bool in_ghost(const ChunkKey& key) const { return ghost_pos_.contains(key); }
  [[nodiscard]] const S3FifoStats& s3_stats() const { return s3_stats_; }

 private:
  using List = std::list<ChunkKey>;
  struct Node {
    bool in_main = false;
    std::uint8_t freq = 0;
    List::iterator pos;
  };

  [[nodiscard]] std::size_t small_target() const;
  void remember_ghost(const ChunkKey& key);

  S3FifoConfig config_;
  List small_;  // front = newest
  List main_;
  List ghost_;
  std::unordered_map<ChunkKey, Node, ChunkKeyHash> nodes_;
  std::unordered_map<ChunkKey, List::iterator, ChunkKeyHash> ghost_pos_;
  S3FifoStats s3_stats_;
};

}  // namespace cxlpool::kvcache
