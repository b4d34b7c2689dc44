// SPDX-License-Identifier: Apache-2.0
// One memory access of a trace: what the trace file format stores, what the
// workload generators produce and what the replay, the controller model and
// the evaluation harness consume.
#pragma once

#include <cstdint>

namespace cxlpool::tiering {

struct TraceRecord {
  std::uint64_t timestamp_ns = 0;  // non-decreasing within a trace
  std::uint64_t address = 0;       // byte address in the traced address space
  std::uint32_t size = 0;          // bytes accessed, >= 1
  bool is_write = false;
  bool operator==(const TraceRecord&) const = default;
};

}  // namespace cxlpool::tiering
