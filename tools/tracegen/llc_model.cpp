// SPDX-License-Identifier: Apache-2.0
#include "llc_model.hpp"

#include <bit>

namespace cxlpool::tracegen {

Result<LlcModel> LlcModel::create(std::uint64_t capacity_bytes, std::uint32_t ways) {
  if (ways == 0 || ways > 64) return fail(EINVAL, "cache ways must be 1..64");
  const std::uint64_t set_bytes = std::uint64_t{ways} * kLineBytes;
  if (capacity_bytes == 0 || capacity_bytes % set_bytes != 0)
    return fail(EINVAL, "cache size must be a multiple of ways x 64 bytes");
  const std::uint64_t sets = capacity_bytes / set_bytes;
  if (!std::has_single_bit(sets) || sets > (1u << 24))
    return fail(EINVAL, "cache size / (ways x 64) must be a power of two up to 2^24");
  return LlcModel(static_cast<std::uint32_t>(sets), ways);
}

LlcModel::LlcModel(std::uint32_t sets, std::uint32_t ways)
    : sets_(sets), ways_(ways), lines_(std::size_t{sets} * ways) {}

void LlcModel::access(std::uint64_t address, std::uint32_t size, bool is_write, std::uint64_t time_ns,
                      std::vector<tiering::TraceRecord>& out) {
  const std::uint64_t first = address / kLineBytes;
  const std::uint64_t last = (address + (size ? size - 1 : 0)) / kLineBytes;
  for (std::uint64_t l = first; l <= last; ++l) line(l, is_write, time_ns, out);
}

void LlcModel::line(std::uint64_t line_number, bool is_write, std::uint64_t time_ns,
                    std::vector<tiering::TraceRecord>& out) {
  Way* set = &lines_[static_cast<std::size_t>(line_number & (sets_ - 1)) * ways_];
  ++clock_;
  Way* victim = set;
  for (std::uint32_t w = 0; w < ways_; ++w) {
    if (set[w].tag == line_number + 1) {
      ++hits_;
      set[w].used = clock_;
      set[w].dirty = set[w].dirty || is_write;
      return;
    }
    // An empty way has used == 0, so it is the least recently used.
    if (set[w].used < victim->used) victim = &set[w];
  }
  ++misses_;
  out.push_back(tiering::TraceRecord{time_ns, line_number * kLineBytes, kLineBytes, false});
  if (victim->tag != 0 && victim->dirty) {
    ++writebacks_;
    out.push_back(tiering::TraceRecord{time_ns, (victim->tag - 1) * kLineBytes, kLineBytes, true});
  }
  *victim = Way{line_number + 1, clock_, is_write};
}

void LlcModel::flush(std::uint64_t time_ns, std::vector<tiering::TraceRecord>& out) {
  for (Way& w : lines_) {
    if (w.tag != 0 && w.dirty) {
      ++writebacks_;
      out.push_back(tiering::TraceRecord{time_ns, (w.tag - 1) * kLineBytes, kLineBytes, true});
      w.dirty = false;
    }
  }
}

}  // namespace cxlpool::tracegen
