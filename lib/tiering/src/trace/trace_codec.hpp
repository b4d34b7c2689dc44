// SPDX-License-Identifier: Apache-2.0
// Record encoding and the running validation shared by the in-memory codec,
// the file writer and the file reader, so all three accept exactly the same
// traces and word their errors the same way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cxlpool/common/result.hpp"
#include "cxlpool/tiering/trace_file.hpp"

namespace cxlpool::tiering::trace_detail {

void put_record(std::byte* out, const TraceRecord& record);
// EBADMSG for an unknown op byte or nonzero reserved bytes.
Result<TraceRecord> get_record(const std::byte* in, std::uint64_t index);

// Checks records in order and accumulates the header's summary fields.
class TraceValidator {
 public:
  // `code`: the errno reported for a bad record (EINVAL writing, EBADMSG reading).
  explicit TraceValidator(int code) : code_(code) {}

  Result<void> check(const TraceRecord& record, std::uint64_t index) const;
  // Only after check() succeeded.
  void add(const TraceRecord& record);
  Result<void> check_and_add(const TraceRecord& record, std::uint64_t index) {
    auto ok = check(record, index);
    if (ok) add(record);
    return ok;
  }

  std::uint64_t count() const { return count_; }
  // Header with the summary fields of the records added so far.
  TraceHeader summary(std::uint16_t flags) const;
  // EBADMSG unless `header`'s count and summary fields match the records.
  Result<void> check_summary(const TraceHeader& header) const;

 private:
  int code_;
  std::uint64_t count_ = 0;
  std::uint64_t address_min_ = 0;
  std::uint64_t address_end_ = 0;
  std::uint64_t first_ns_ = 0;
  std::uint64_t last_ns_ = 0;
};

}  // namespace cxlpool::tiering::trace_detail
