// SPDX-License-Identifier: Apache-2.0
// The Prometheus text exposition (format 0.0.4) of the daemon's counters
// and duration histograms, named and typed by metric_table.hpp.
#pragma once

#include <string>
#include <vector>

#include "cxlpool/proto/messages.hpp"
#include "duration_histogram.hpp"

namespace cxlpool::daemon {

// A histogram under its internal name ("kv.op_duration.get"); the table
// gives its family and label.
struct HistogramSample {
  std::string name;
  const DurationHistogram* histogram = nullptr;
};

// "pool.regions_created" → "cxlpool_pool_regions_created_total";
// "tier.dram0.used_bytes" → "cxlpool_tier_used_bytes{tier=\"dram0\"}".
// Each family once, with its # HELP and # TYPE, its series together. A
// counter the table lacks is still served, untyped, under its sanitized
// name (the golden-list test catches it).
std::string render_prometheus(const std::vector<proto::Counter>& counters,
                              const std::vector<HistogramSample>& histograms = {});

}  // namespace cxlpool::daemon
