// SPDX-License-Identifier: Apache-2.0
// Hotness table: a decayed access score per page the manager has observed,
// used to rank fast-tier pages coldest first for demotion (the role MGLRU
// plays for M5's manager).
//
// score = sum over epochs of count * 2^-(age in epochs / kHalfLifeEpochs),
// kept lazily: an entry stores its score as of its last epoch and is aged
// when read. The half-life spans several epochs because one epoch of a
// page's accesses is a small sample (a page a few times hotter than the
// coldest fast pages may see 0-3 accesses in an epoch); a sum over about a
// dozen epochs ranks such pages, while a hot set that moves still overtakes
// the old one within a few epochs. In steady state a page that receives r
// accesses per epoch scores about r / (1 - 2^-1/kHalfLifeEpochs) (~12 r). The
// table is bounded: when it is full, the coldest eighth is dropped. Pages it
// does not know score 0 -- colder than anything observed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cxlpool::tiering::manager {

class HotnessTable {
 public:
  static constexpr std::size_t kDefaultMaxEntries = std::size_t{1} << 20;
  static constexpr std::uint32_t kHalfLifeEpochs = 8;
  // Steady-state score / accesses per epoch: 1 / (1 - 2^(-1/kHalfLifeEpochs)).
  static double steady_gain();

  explicit HotnessTable(std::size_t max_entries = kDefaultMaxEntries);

  // `count` accesses of page `id` in epoch `epoch`.
  void add(std::uint64_t id, std::uint64_t count, std::uint32_t epoch);
  // Score as of `epoch`; 0 for unknown pages.
  double score(std::uint64_t id, std::uint32_t epoch) const;
  // Drops what the page has earned (it left the tier the table ranks).
  void forget(std::uint64_t id);

  std::size_t size() const { return size_; }
  std::size_t max_entries() const { return max_entries_; }
  std::size_t memory_bytes() const { return slots_.size() * sizeof(Slot); }

 private:
  static constexpr std::uint64_t kEmpty = ~0ULL;  // ids are 52-bit: never all ones
  struct Slot {
    std::uint64_t id = kEmpty;
    float score = 0;
    std::uint32_t epoch = 0;
  };
  static float aged(const Slot& s, std::uint32_t epoch);
  std::size_t find_slot(std::uint64_t id) const;  // its slot or the empty one it would take
  void grow();
  void evict_coldest(std::uint32_t epoch);
  void rehash(std::size_t slots, std::vector<Slot> keep);

  std::size_t max_entries_;
  std::size_t size_ = 0;
  std::vector<Slot> slots_;  // open addressing, linear probing, power-of-two size
};

}  // namespace cxlpool::tiering::manager
