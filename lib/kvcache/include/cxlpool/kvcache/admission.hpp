// SPDX-License-Identifier: Apache-2.0
#pragma once
// SSD admission: a chunk is written to flash only once it has been seen at
// least `threshold` times, so one-off prefixes do not wear the device.
// Sightings are counted in a Count-Min sketch (depth rows of width 8-bit
// saturating counters, conservative update) whose counters are all halved
// every `halve_every` sightings, so memory is fixed (depth * width bytes) and
// old popularity fades.
//
// Error behaviour:
// - False admits: the sketch only overestimates, so a chunk seen fewer than
//   threshold times is admitted when, in every row, other keys sharing its
//   counter push it to the threshold; the rate grows with the number of
//   distinct keys seen since the last halving relative to width. Measured
//   (tests/unit/kvcache/policy/admission_test.cpp): 0.085% of once-seen keys
//   admitted with 16k distinct keys in the default 4 x 65536. A false admit
//   costs one unnecessary flash write, never a wrong answer.
// - False rejects: only through halving: a chunk whose sightings straddle a
//   halving can count below what it was seen. Without a halving in between,
//   a chunk seen threshold times is always admitted.
#include <cstdint>
#include <vector>

#include "cxlpool/kvcache/chunk_key.hpp"

namespace cxlpool::kvcache {

struct AdmissionConfig {
  std::uint32_t threshold = 2;  // sightings needed; 0 or 1 admits on first sight
  std::uint32_t depth = 4;      // rows (1..8)
  std::uint32_t width = 65536;  // counters per row, rounded up to a power of two
  std::uint64_t halve_every = 0;  // 0: 10 * width sightings
};

struct AdmissionStats {
  std::uint64_t sightings = 0;
  std::uint64_t admitted = 0;
  std::uint64_t rejected = 0;
  std::uint64_t halvings = 0;
};

class AdmissionFilter {
 public:
  explicit AdmissionFilter(const AdmissionConfig& config = {});

  // One sighting of the chunk (a put, a hit, a lookup that found it).
  void record(const ChunkKey& key);
  // Sightings counted for key (an upper bound, modulo halving).
  [[nodiscard]] std::uint32_t estimate(const ChunkKey& key) const;
  // The decision at demotion time; counted in the stats.
  bool admit(const ChunkKey& key);

  [[nodiscard]] const AdmissionConfig& config() const { return config_; }
  [[nodiscard]] const AdmissionStats& stats() const { return stats_; }
  [[nodiscard]] std::size_t memory_bytes() const { return counters_.size(); }

 private:
  void halve();

  AdmissionConfig config_;
  std::uint64_t mask_;
  std::uint64_t since_halving_ = 0;
  std::vector<std::uint8_t> counters_;  // depth rows of width
  AdmissionStats stats_;
};

}  // namespace cxlpool::kvcache
