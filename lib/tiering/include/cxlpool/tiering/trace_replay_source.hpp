// SPDX-License-Identifier: Apache-2.0
// Access source "trace": replays a trace through the controller model.
// Each collect() advances one epoch and reports every page touched in it with
// its exact access count (PAC) and exact word mask (from the WAC), in
// AddressSpace::kTrace. The same epoch's HPT/HWT view (what a real
// controller would have reported) stays available through last_epoch(), so
// a caller can compare the sketches with the truth.
//
// Epochs are spans of trace time (epoch_ns, starting at the first record's
// timestamp; an epoch without records reports nothing) or, when epoch_ns is
// 0, runs of epoch_records records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "cxlpool/common/result.hpp"
#include "cxlpool/hal/access_source.hpp"
#include "cxlpool/tiering/controller_model.hpp"
#include "cxlpool/tiering/trace_record.hpp"

namespace cxlpool::tiering {

struct TraceReplayConfig {
  ControllerModelConfig model;
  std::uint64_t epoch_ns = 100'000'000;  // trace time per epoch; 0 = count records
  std::uint64_t epoch_records = 0;       // records per epoch when epoch_ns == 0, >= 1
};

class TraceReplaySource final : public hal::AccessSource {
 public:
  // EINVAL: epoch_ns and epoch_records both 0, or a bad model config.
  // Trace file errors as TraceReader (trace_file.hpp); collect() reports
  // records that fail validation later in the file.
  static Result<std::unique_ptr<TraceReplaySource>> open(const std::string& path, const TraceReplayConfig& config);
  // Owns the records; EINVAL if a record is invalid (size 0, timestamps
  // going backwards, address + size past 2^64), naming its index.
  static Result<std::unique_ptr<TraceReplaySource>> from_records(std::vector<TraceRecord> records,
                                                                 const TraceReplayConfig& config);
  // Does not copy: `records` must outlive the source. Validated as above.
  static Result<std::unique_ptr<TraceReplaySource>> from_span(std::span<const TraceRecord> records,
                                                              const TraceReplayConfig& config);
  ~TraceReplaySource() override;

  std::string_view name() const override { return "trace"; }
  hal::AccessSourceTraits traits() const override { return {true, true, false}; }
  // One epoch: appends one PageAccess per page touched (ascending address).
  // Past the end of the trace it appends nothing and finished() is true.
  Result<void> collect(std::vector<hal::PageAccess>& out) override;
  // Records replayed so far.
  std::uint64_t accesses_total() const override;

  bool finished() const;
  // The epoch the last collect() replayed: exact counts, HPT and HWT view.
  const ControllerEpoch& last_epoch() const;
  // Trace time covered by the last collect(): [start, end).
  std::uint64_t last_epoch_start_ns() const;
  std::uint64_t last_epoch_end_ns() const;
  const ControllerModel& model() const;

 private:
  struct State;
  explicit TraceReplaySource(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace cxlpool::tiering
