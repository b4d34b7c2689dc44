// SPDX-License-Identifier: Apache-2.0
// A last-level cache model that turns a program's loads and stores into the
// traffic its memory sees: a line fill (read of 64 bytes) on every miss and a
// write-back (write of 64 bytes) when a dirty line is evicted. Set
// associative, LRU within a set, write-allocate, write-back. No prefetcher:
// what it adds depends on the CPU, and a tier's placement should be judged on
// demand traffic first.
#pragma once

#include <cstdint>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tracegen {

class LlcModel {
 public:
  static constexpr std::uint32_t kLineBytes = 64;

  // capacity: bytes, a multiple of ways x 64 giving a power-of-two set count.
  static Result<LlcModel> create(std::uint64_t capacity_bytes, std::uint32_t ways);

  // One access of [address, address + size) at time_ns; appends the memory
  // traffic it causes to `out` (fills, then the write-backs of the lines
  // they displaced, each at time_ns).
  void access(std::uint64_t address, std::uint32_t size, bool is_write, std::uint64_t time_ns,
              std::vector<tiering::TraceRecord>& out);
  // Writes back every dirty line (the end of the trace), at time_ns.
  void flush(std::uint64_t time_ns, std::vector<tiering::TraceRecord>& out);

  std::uint64_t hits() const { return hits_; }
  std::uint64_t misses() const { return misses_; }
  std::uint64_t writebacks() const { return writebacks_; }

 private:
  LlcModel(std::uint32_t sets, std::uint32_t ways);
  void line(std::uint64_t line_number, bool is_write, std::uint64_t time_ns, std::vector<tiering::TraceRecord>& out);

  struct Way {
    std::uint64_t tag = 0;  // line number + 1; 0 = empty
    std::uint64_t used = 0;
    bool dirty = false;
  };
  std::uint32_t sets_;
  std::uint32_t ways_;
  std::vector<Way> lines_;  // sets_ x ways_
  std::uint64_t clock_ = 0;
  std::uint64_t hits_ = 0, misses_ = 0, writebacks_ = 0;
};

}  // namespace cxlpool::tracegen
