// SPDX-License-Identifier: Apache-2.0
// What `cxlpool-tracegen --info` reports about a trace file: its header and
// the access shape that matters for tiering (how many pages, how sparse, how
// skewed), from the controller model's exact counters.
#pragma once

#include <cstdint>
#include <string>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_file.hpp"

namespace cxlpool::tracegen {

inline constexpr int kSparseMaxWords = 16;  // M5's sparse page: <= 16 of 64 words

struct TraceSummary {
  tiering::TraceHeader header;
  std::uint64_t writes = 0;
  std::uint64_t page_accesses = 0;  // per page spanned
  std::uint64_t pages_touched = 0;
  std::uint64_t words_touched = 0;
  std::uint64_t sparse_pages = 0;   // over the whole trace
  double top1_share = 0;            // accesses to the hottest 1% of touched pages / all
  double top1_sparse_fraction = 0;  // of those hottest 1%, the share that is sparse
  // Per epoch of epoch_ns (0: not computed).
  std::uint64_t epoch_ns = 0;
  std::uint64_t epochs = 0;
  double mean_pages_per_epoch = 0;
  double epoch_sparse_fraction = 0;  // sparse (page, epoch) pairs / all pairs
};

// Reads and validates the whole file (trace_file.hpp errors).
Result<TraceSummary> summarize_trace(const std::string& path, std::uint64_t epoch_ns);

}  // namespace cxlpool::tracegen
