// SPDX-License-Identifier: Apache-2.0
// Results files and SVG plots.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "report.hpp"
#include "result_files.hpp"
#include "support/temp_dir.hpp"
#include "svg_plot.hpp"

namespace cxlpool::tiering::eval {
namespace {

using test::expect_svg_files;
using test::read_file;

PolicyRow row(const std::string& trace, const std::string& kind, double share, double ratio) {
  PolicyRow r;
  r.trace = trace;
  r.policy = kind;
  r.kind = kind;
  r.tiering.policy = kind;
  r.tiering.accesses = 1000;
  r.tiering.fast_share = share;
  r.tiering.share_series = {share, -1.0, share};
  r.tiering.bucket_ns = 1'000'000'000;
  r.tiering.counters = {{"promoted", 7}};
  if (ratio >= 0) {
    SimResult d;
    d.has_ratio = true;
    d.ratio = ratio;
    d.ratio_epochs = 3;
    r.detection = d;
  }
  return r;
}

TEST(Report, WritesEveryFile) {
  const ::cxlpool::test::TempDir scratch("tiering-eval-report");
  const auto dir = scratch.resolve("results");
  std::vector<PolicyRow> rows{row("sparse-kv", "oracle", 0.9, 1.0), row("sparse-kv", "damon", 0.5, 0.4),
                              row("sparse-kv", "autonuma", 0.6, 0.3), row("sparse-kv", "m5-hpt", 0.88, 0.96),
                              row("sparse-kv", "no-migration", 0.4, -1)};
  for (auto& r : rows) r.share_vs_oracle = r.tiering.fast_share / 0.9;
  rows[3].migrated_vs_oracle = 0.25;
  RunInfo info;
  info.command = "cxlpool-tiering-eval --quick";
  info.traces.push_back(TraceSummary{"sparse-kv", 10, 12, 5, 1, 1000});
  info.trace_origins.push_back("generated <&>");
  ASSERT_TRUE(write_results(dir.string(), info, rows));

  const auto j = nlohmann::json::parse(read_file(dir / "results.json"));
  ASSERT_EQ(j["results"].size(), rows.size());
  EXPECT_EQ(j["results"][3]["policy"], "m5-hpt");
  EXPECT_DOUBLE_EQ(j["results"][3]["detection"]["ratio"].get<double>(), 0.96);
  EXPECT_EQ(j["results"][1]["tiering"]["counters"]["promoted"], 7);
  EXPECT_DOUBLE_EQ(j["results"][3]["migrated_vs_oracle"].get<double>(), 0.25);
  EXPECT_FALSE(j["results"][4].contains("migrated_vs_oracle"));

  const std::string csv = read_file(dir / "results.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 6);
  EXPECT_EQ(csv.rfind("trace,policy,", 0), 0u);

  const std::string md = read_file(dir / "results.md");
  EXPECT_NE(md.find("| sparse-kv | m5-hpt | 0.960 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| migrated vs oracle |"), std::string::npos) << md;
  EXPECT_NE(md.find(" | 0.25 | "), std::string::npos) << md;
  EXPECT_NE(md.find("2.40x the better baseline"), std::string::npos) << md;  // 0.96 / 0.4
  EXPECT_NE(md.find("(>= 1.5x: met)"), std::string::npos);
  EXPECT_NE(md.find("0.978 of oracle (>= 0.95: met)"), std::string::npos);

  expect_svg_files(dir, {"ratio.svg", "share_sparse-kv.svg"});
  // The no-data bucket splits the line into two polylines per policy.
  const std::string share = read_file(dir / "share_sparse-kv.svg");
  std::size_t lines = 0;
  for (std::size_t at = share.find("<polyline"); at != std::string::npos; at = share.find("<polyline", at + 1)) ++lines;
  EXPECT_EQ(lines, 2 * rows.size());
}

TEST(Report, TableAndEscaping) {
  std::vector<PolicyRow> rows{row("zipf", "no-migration", 0.5, -1)};
  const std::string t = format_table(rows);
  EXPECT_NE(t.find("n/a"), std::string::npos);
  EXPECT_EQ(xml_escape("a<b&\"c\">"), "a&lt;b&amp;&quot;c&quot;&gt;");
}

TEST(Report, BarChartSkipsMissingBars) {
  BarChart c;
  c.bar_labels = {"x", "y"};
  c.groups.push_back({"g", {0.5, -1}});
  const std::string s = render_svg(c);
  std::size_t rects = 0;
  for (std::size_t at = s.find("<rect x="); at != std::string::npos; at = s.find("<rect x=", at + 1)) ++rects;
  EXPECT_EQ(rects, 1u + 2u);  // one bar + two legend swatches
}

}  // namespace
}  // namespace cxlpool::tiering::eval
