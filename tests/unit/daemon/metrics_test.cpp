// SPDX-License-Identifier: Apache-2.0
// The metrics table against Prometheus' naming rules, the text renderer, and
// docs/metrics.md against the table.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "support/environment.hpp"
#include "metrics/metric_table.hpp"
#include "metrics/prometheus_text.hpp"
#include "support/whole_file.hpp"

namespace cxlpool::daemon {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) { return s.ends_with(suffix); }

TEST(MetricTable, NamesFollowPrometheusRules) {
  static const std::regex kName("cxlpool_[a-z0-9_]+");
  static const std::regex kLabel("[a-z][a-z0-9_]*");
  std::set<std::string_view> sources;
  std::set<std::string_view> names;
  for (const MetricSpec& m : metric_table()) {
    SCOPED_TRACE(std::string(m.source));
    EXPECT_TRUE(sources.insert(m.source).second) << "two rows for one internal name";
    const MetricMatch match = *match_metric(m.source);
    if (!match.label_name.empty()) {
      EXPECT_TRUE(std::regex_match(match.label_name, kLabel));
      EXPECT_NE(match.label_name, "le") << "reserved for histogram buckets";
    }
    if (m.name.empty()) continue;  // not exported
    const std::string name(m.name);
    EXPECT_TRUE(std::regex_match(name, kName));
    EXPECT_TRUE(names.insert(m.name).second) << "two rows for one family";
    EXPECT_FALSE(m.help.empty());
    EXPECT_EQ(m.help.find_first_of("\\\n"), std::string_view::npos);
    // Counters and only counters end in _total.
    EXPECT_EQ(ends_with(name, "_total"), m.type == MetricType::kCounter);
    std::string_view stem = m.name;
    if (m.type == MetricType::kCounter) stem.remove_suffix(6);
    // The base unit closes the name; no scaled units anywhere in it.
    if (!m.unit.empty()) { EXPECT_TRUE(ends_with(stem, "_" + std::string(m.unit))) << m.unit; }
    for (const char* scaled : {"_ns", "_us", "_ms", "_bps", "_mbps", "_kib", "_mib", "_percent"}) {
      EXPECT_EQ((name + "_").find(std::string(scaled) + "_"), std::string::npos) << scaled;
    }
    for (const char* unit : {"_bytes", "_seconds"}) {
      if ((name + "_").find(std::string(unit) + "_") != std::string::npos) { EXPECT_FALSE(m.unit.empty()); }
    }
    if (m.type == MetricType::kHistogram) { EXPECT_EQ(m.unit, "seconds"); }
    if (m.scale != 1) { EXPECT_EQ(m.unit, "seconds") << "only nanoseconds are rescaled"; }
    // The request type is a label, not part of the name.
    EXPECT_TRUE(name.find("requests_") == std::string::npos || ends_with(name, "requests_total")) << name;
  }
}

TEST(MetricTable, InternalNamesMapWithTheirLabel) {
  auto m = match_metric("control.requests_RegionCreate");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->spec->name, "cxlpool_control_requests_total");
  EXPECT_EQ(m->label_name, "type");
  EXPECT_EQ(m->label_value, "RegionCreate");
  m = match_metric("kv.tier.ssd.bytes_read");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->spec->name, "cxlpool_kv_tier_read_bytes_total");
  EXPECT_EQ(m->label_value, "ssd");
  m = match_metric("pool.migrated_bytes");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->spec->type, MetricType::kCounter);
  EXPECT_EQ(m->spec->name, "cxlpool_pool_migrated_bytes_total");
  EXPECT_FALSE(match_metric("no.such.counter"));
  EXPECT_FALSE(match_metric("tier..used_bytes")) << "an empty label value";
}

TEST(PrometheusText, HelpTypeAndSamplesPerFamily) {
  const std::vector<proto::Counter> counters = {{"kv.gets", 5},
                                                {"control.requests", 3},
                                                {"control.requests_Hello", 1},
                                                {"control.requests_Stats", 2},
                                                {"weights.load_ns_total", 1500000000},
                                                {"tier.slow-a.used_bytes", 4096},
                                                {"tier.slow_a.used_bytes", 8192}};
  const std::string text = render_prometheus(counters);
  EXPECT_NE(text.find("# HELP cxlpool_kv_gets_total KV gets.\n# TYPE cxlpool_kv_gets_total counter\n"
                      "cxlpool_kv_gets_total 5\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE cxlpool_control_requests_total counter\n"
                      "cxlpool_control_requests_total{type=\"Hello\"} 1\n"
                      "cxlpool_control_requests_total{type=\"Stats\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("cxlpool_control_requests_total 3"), std::string::npos) << "the sum is Prometheus' job";
  EXPECT_NE(text.find("cxlpool_weights_load_seconds_total 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tier_used_bytes{tier=\"slow-a\"} 4096\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_tier_used_bytes{tier=\"slow_a\"} 8192\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("# TYPE cxlpool_tier_used_bytes"), text.rfind("# TYPE cxlpool_tier_used_bytes"));
}

TEST(PrometheusText, SeriesOfAFamilyStayTogether) {
  // The daemon lists counters tier by tier; the text must not interleave families.
  const std::vector<proto::Counter> counters = {{"tier.a.capacity_bytes", 1}, {"tier.a.used_bytes", 2},
                                                {"tier.b.capacity_bytes", 3}, {"tier.b.used_bytes", 4}};
  const std::string text = render_prometheus(counters);
  EXPECT_NE(text.find("cxlpool_tier_capacity_bytes{tier=\"a\"} 1\ncxlpool_tier_capacity_bytes{tier=\"b\"} 3\n"),
            std::string::npos)
      << text;
}

TEST(PrometheusText, HistogramBucketsAreCumulative) {
  DurationHistogram h;
  h.record(800);            // <= 1 us
  h.record(3'000);          // <= 5 us
  h.record(20'000'000'000); // past the last bound: +Inf only
  const std::string text = render_prometheus({}, {{"kv.op_duration.get", &h}});
  EXPECT_NE(text.find("# TYPE cxlpool_kv_request_duration_seconds histogram\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_bucket{op=\"get\",le=\"1e-06\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_bucket{op=\"get\",le=\"5e-06\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_bucket{op=\"get\",le=\"10\"} 2\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_bucket{op=\"get\",le=\"+Inf\"} 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_count{op=\"get\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("cxlpool_kv_request_duration_seconds_sum{op=\"get\"} 20.0000038\n"), std::string::npos)
      << text;
}

TEST(PrometheusText, ACounterMissingFromTheTableIsStillServedUntyped) {
  const std::string text = render_prometheus({{"new.thing", 7}});
  EXPECT_NE(text.find("# TYPE cxlpool_new_thing untyped\ncxlpool_new_thing 7\n"), std::string::npos) << text;
}

TEST(MetricTable, EveryFamilyIsDocumented) {
  const std::string doc = test::read_file(test::env_value("CXLPOOL_METRICS_DOC"));
  ASSERT_FALSE(doc.empty()) << "CXLPOOL_METRICS_DOC is not set (run through meson test)";
  for (const MetricSpec& m : metric_table()) {
    if (m.name.empty()) continue;
    EXPECT_NE(doc.find("`" + std::string(m.name) + "`"), std::string::npos) << "docs/metrics.md lacks " << m.name;
  }
}

}  // namespace
}  // namespace cxlpool::daemon
