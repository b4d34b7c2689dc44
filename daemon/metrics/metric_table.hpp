// SPDX-License-Identifier: Apache-2.0
// The Prometheus view of the daemon's counters, one row per metric: which
// internal counter (the names `cxlpoolctl stats` and cxlpool_stats() show)
// it comes from, the exported name, its type, base unit, label and help.
// The internal names stay as they are; this table only maps them.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace cxlpool::daemon {

enum class MetricType { kCounter, kGauge, kHistogram };

struct MetricSpec {
  // The internal name. At most one segment may be "{label}": it matches any
  // non-empty text and becomes that label's value ("tier.{tier}.used_bytes").
  std::string_view source;
  // The exported family name; empty: not exported (derivable from another row).
  std::string_view name;
  MetricType type;
  // Prometheus base unit the name ends with ("bytes", "seconds"), "" for a
  // plain count.
  std::string_view unit;
  // exported value = internal value * scale (nanoseconds → seconds: 1e-9).
  double scale;
  std::string_view help;
};

std::span<const MetricSpec> metric_table();

struct MetricMatch {
  const MetricSpec* spec = nullptr;
  std::string label_name;   // empty: no label
  std::string label_value;
};

// The row an internal name maps to; nullopt when no row matches.
std::optional<MetricMatch> match_metric(std::string_view internal_name);

std::string_view to_string(MetricType type);

}  // namespace cxlpool::daemon
