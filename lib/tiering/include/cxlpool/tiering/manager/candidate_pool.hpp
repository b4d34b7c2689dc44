// SPDX-License-Identifier: Apache-2.0
// Candidate pool: slow-tier pages the nominator named in recent epochs,
// kept across epochs so that promotion ranks them by what they earned over
// many epochs (the hotness table) rather than by one epoch's sample.
//
// The nominator still decides which pages are candidates at all (M5's HPT
// or HWT top-K); the pool only remembers them, with their hot-word masks
// OR-ed over the epochs they were named in, so a page whose accesses spread
// over more than sparse_max_words words across epochs is not called sparse
// from one epoch's handful of accesses. A page leaves the pool when it is no
// longer on the slow tier, when its score decays below half the nomination
// floor, or -- when the pool is full -- as one of the coldest.
//
// Only pages named again at least kMinReuseEpochs epochs after they were
// first named are offered for promotion: a page read once in a burst (a
// streamed page) has a high count in the epoch or two the burst spans and no
// reuse after it, so moving it buys nothing (and displaces a page that is
// still used); a page that stays hot is named again a few epochs later. The
// cost is a delay of kMinReuseEpochs epochs before a new hot page moves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "cxlpool/tiering/m5_manager.hpp"
#include "cxlpool/tiering/manager/hotness_table.hpp"

namespace cxlpool::tiering::manager {

inline constexpr std::uint32_t kMinReuseEpochs = 2;

class CandidatePool {
 public:
  explicit CandidatePool(std::size_t max_entries) : max_entries_(max_entries < 1 ? 1 : max_entries) {}

  // This epoch's nominations (located); only slow-tier ones are kept.
  void add(std::span<const Nomination> nominations, std::uint32_t epoch);

  // Drops pages that left the slow tier or cooled off, then returns the
  // rest as located nominations (count = hotness score, rounded; words and
  // class from the accumulated mask), hottest first. Bounds the pool.
  const std::vector<Nomination>& refresh(const PlacementView& placement, const HotnessTable& hotness,
                                         std::uint32_t epoch, std::uint32_t min_accesses,
                                         std::uint32_t sparse_max_words);

  void forget(std::uint64_t id) { entries_.erase(id); }
  void set_max_entries(std::size_t n) { max_entries_ = n < 1 ? 1 : n; }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    PageKey page;
    std::uint64_t words = 0;
    std::uint32_t first_epoch = 0;  // when it was first named (since it joined)
    std::uint32_t last_epoch = 0;   // when it was last named
  };
  std::size_t max_entries_;
  std::unordered_map<std::uint64_t, Entry> entries_;
  std::vector<Nomination> ranked_;
  std::vector<std::pair<double, std::uint64_t>> scratch_;
};

}  // namespace cxlpool::tiering::manager
