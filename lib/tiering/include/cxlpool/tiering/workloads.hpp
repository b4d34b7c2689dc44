// SPDX-License-Identifier: Apache-2.0
// Synthetic memory-access traces with the shapes that decide how well a
// tiering policy does. Every access is one 64-byte cache line (what a CXL
// controller sees) unless noted; all addresses lie in
// [base_address, base_address + footprint_bytes); timestamps are spread evenly
// over [0, duration_ns) and never decrease; the same config gives the same
// trace, bit for bit (the generators carry their own random streams; only
// libm's pow/exp/log enter, so compilers agree on one C library).
//
// Zipf ranks are drawn from an alias table (O(1) per draw, the same
// distribution as ZipfGenerator): a CDF binary search over 2^16+ items costs
// a cache miss per level and held generation to a few million records/s.
//
//   zipf       Page popularity is Zipf(zipf_exponent) over all pages of the
//              footprint; rank -> page is a random permutation, so hot pages
//              are scattered rather than adjacent. Inside a page the word is
//              Zipf(word_exponent) over the 64 words with a per-page order,
//              so hot pages end up dense and lukewarm pages partly touched.
//
//   shifting   The zipf trace cut into `phases` equal phases; each phase draws
//              a new rank -> page mapping, and its hot set (ranks below
//              hot_fraction * pages) is drawn from pages that were outside the
//              previous phase's hot set: yesterday's hot pages go cold. The
//              hot set moves phases - 1 times.
//
//   sparse-kv  A Redis-like key-value store. A bucket array (8 bytes per key)
//              is followed by the object heap: objects of 64-512 bytes (size
//              classes 64/128/256/512 at 40/30/20/10%) placed as a slab
//              allocator does, each page holding objects of one class. Key
//              popularity is Zipf(zipf_exponent) over a random key order. A
//              request reads the key's bucket (8 bytes), then the object: a
//              64-byte object is one line, a 128-byte string is read whole,
//              a larger object is a small hash of which the request reads the
//              header line and one field's line. A SET (write_fraction of the
//              requests) writes the last line it touches.
//              Hot keys are scattered over the heap, so most heap pages see
//              only a few of their 64 words (the M5 paper measures 86% of
//              Redis pages with <= 16 words touched), while the bucket array
//              (hashing spreads reads over every word) and the pages swept by
//              a periodic incremental SCAN/expiry pass (every
//              scan_interval-th operation reads the next bucket line) are
//              dense.
//
//   graph      PageRank over a CSR graph filling the footprint: offsets
//              (8 B per vertex), edges (4 B each, graph_degree per vertex on
//              average, power-law out-degrees), rank and next_rank (8 B per
//              vertex). An iteration streams offsets and edges sequentially
//              (one access per line), reads rank[] of every edge's source
//              (8 bytes; power-law popular with exponent zipf_exponent: high
//              in-degree vertices are read far more often) and writes
//              next_rank[] sequentially (the only writes: write_fraction
//              does not apply). Iterations repeat
//              until `accesses` records; on a large footprint the trace may
//              cover only part of the first iteration, so the streamed edge
//              pages are touched once, densely, then never again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tiering {

enum class WorkloadKind : std::uint8_t { kZipf, kShiftingHotSet, kSparseKv, kGraph };

// "zipf", "shifting", "sparse-kv", "graph".
const char* workload_kind_name(WorkloadKind kind);
std::optional<WorkloadKind> parse_workload_kind(std::string_view name);
std::vector<WorkloadKind> all_workload_kinds();

struct WorkloadConfig {
  WorkloadKind kind = WorkloadKind::kZipf;
  std::uint64_t footprint_bytes = 256ull << 20;  // multiple of 4 KiB, kMinFootprint..kMaxFootprint
  std::uint64_t accesses = 4'000'000;            // records, 0..kMaxAccesses
  std::uint64_t seed = 1;
  double zipf_exponent = 0.99;                   // page (zipf, shifting) or key (sparse-kv) skew, 0..5
  std::uint64_t duration_ns = 4'000'000'000;     // trace time span, >= 1
  std::uint64_t base_address = 0;                // multiple of 4 KiB
  double write_fraction = 0.3;                   // share of writes (zipf, shifting, sparse-kv SETs), 0..1
  double word_exponent = 1.0;                    // zipf, shifting: skew over the words of a page, 0..5
  std::uint32_t phases = 4;                      // shifting: equal phases, each with a new hot set, 1..4096
  double hot_fraction = 0.1;                     // shifting: pages in a phase's hot set, (0, 0.5]
  std::uint32_t scan_interval = 64;              // sparse-kv: one bucket-sweep read every N ops; 0 = none
  std::uint32_t graph_degree = 16;               // graph: mean out-degree, 1..1024

  static constexpr std::uint64_t kMinFootprint = 64 * 1024;
  static constexpr std::uint64_t kMaxFootprint = 1ull << 38;  // 256 GiB: 2^26 pages
  static constexpr std::uint64_t kMaxAccesses = 1ull << 36;

  // EINVAL naming the field and its allowed range.
  Result<void> validate() const;
};

// Produces a workload's records in order, batch by batch, without holding the
// trace: memory is what the generator's tables need (about 12 bytes per page
// for zipf and shifting, 12 bytes per key for sparse-kv, O(1) for graph).
class WorkloadStream {
 public:
  // EINVAL: invalid config.
  static Result<WorkloadStream> create(const WorkloadConfig& config);
  WorkloadStream(WorkloadStream&&) noexcept;
  WorkloadStream& operator=(WorkloadStream&&) noexcept;
  ~WorkloadStream();

  // Fills a prefix of `out` with the next records; returns how many (0 once
  // `accesses` records were produced).
  std::size_t next(std::span<TraceRecord> out);

  std::uint64_t produced() const;
  const WorkloadConfig& config() const;

  // Generator-side interface, one implementation per kind.
  class Generator {
   public:
    virtual ~Generator() = default;
    // Fills `out` completely; timestamps are set by the stream afterwards.
    virtual void fill(std::span<TraceRecord> out, std::uint64_t first_index) = 0;
  };

 private:
  WorkloadStream(const WorkloadConfig& config, std::unique_ptr<Generator> generator);
  WorkloadConfig config_;
  std::unique_ptr<Generator> generator_;
  std::uint64_t produced_ = 0;
};

// The whole trace in memory (accesses * 24 bytes).
Result<std::vector<TraceRecord>> generate_workload(const WorkloadConfig& config);

}  // namespace cxlpool::tiering
